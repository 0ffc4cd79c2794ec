package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"contextd/buildinfo"
	"contextd/internal/testkit"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// closedAddr is a loopback address nothing listens on: a port the kernel
// handed out and that was closed again. Only for checking the answer to
// "nothing there"; a test that serves listens on 127.0.0.1:0 instead.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestServe starts the real binary's run loop on temp dirs, checks the
// token file (0600, 64 hex chars = 256 bits), the token requirement, and
// the graceful shutdown on context cancel.
func TestServe(t *testing.T) {
	dir := t.TempDir()
	sessions := filepath.Join(dir, "sessions")
	os.MkdirAll(sessions, 0o755)
	b, _ := os.ReadFile(filepath.Join("..", "..", "testdata", "pi-tree", "tree-basic.jsonl"))
	os.WriteFile(filepath.Join(sessions, "a.jsonl"), b, 0o600)
	// A file with one unparseable line and one with invalid manifests feed
	// the skipped-lines and invalid-archives metrics.
	b, _ = os.ReadFile(filepath.Join("..", "..", "testdata", "pi-sessions", "compact.jsonl"))
	os.WriteFile(filepath.Join(sessions, "b.jsonl"), b, 0o600)
	b, _ = os.ReadFile(filepath.Join("..", "..", "testdata", "pi-tree", "tree-bad-manifests-small.jsonl"))
	os.WriteFile(filepath.Join(sessions, "c.jsonl"), b, 0o600)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	stderr := &testkit.LockedBuffer{}
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0"}, env(map[string]string{
			"CONTEXTD_SESSIONS_DIR": sessions, "CONTEXTD_STATE_DIR": filepath.Join(dir, "state"),
		}), io.Discard, stderr)
	}()
	// The discovery file names the listener (a port the kernel chose for
	// :0, answering /healthz), this process and the version.
	url := testkit.WaitServing(t, filepath.Join(dir, "state"), os.Getpid(), 30*time.Second, stderr.String)
	addr := strings.TrimPrefix(url, "http://")
	if host, port, err := net.SplitHostPort(addr); err != nil || host != "127.0.0.1" || port == "0" {
		t.Errorf("discovery URL %q: want http://127.0.0.1:<the port bound for :0>", url)
	}
	disc, err := os.ReadFile(filepath.Join(dir, "state", "contextd.json"))
	if want := fmt.Sprintf(`{"url":"http://%s","socket":%q,"pid":%d,"version":%q}`+"\n", addr, filepath.Join(dir, "state", "contextd.sock"), os.Getpid(), buildinfo.Read().Version); err != nil || string(disc) != want {
		t.Errorf("discovery file = %q (%v), want %q", disc, err, want)
	}
	fi, err := os.Stat(filepath.Join(dir, "state", "token"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token mode = %v, want 0600", fi.Mode().Perm())
	}
	tok, _ := os.ReadFile(filepath.Join(dir, "state", "token"))
	if n := len(strings.TrimSpace(string(tok))); n != 64 {
		t.Errorf("token has %d hex chars, want 64 (256 bits)", n)
	}
	resp, err := http.Get("http://" + addr + "/v1/sessions")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without token: %d, want 401", resp.StatusCode)
	}
	resp.Body.Close()
	// Each session used (GET /v1/sessions/{id} indexes it), then listed.
	for _, id := range []string{"019f3d67-b1fd-7c0a-87d5-9b46277407ba", "2638daee-0588-4baa-bd33-68b4c002818e", "019f4c92-9f78-7955-a120-9eba5b90f6f1"} {
		req, _ := http.NewRequest("GET", "http://"+addr+"/v1/sessions/"+id, nil)
		req.Header.Set("X-Contextd-Token", strings.TrimSpace(string(tok)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET /v1/sessions/%s: %v %v", id, err, resp)
		}
		resp.Body.Close()
	}
	req, _ := http.NewRequest("GET", "http://"+addr+"/v1/sessions", nil)
	req.Header.Set("X-Contextd-Token", strings.TrimSpace(string(tok)))
	resp, err = http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("with token: %v %v", err, resp)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(body, []byte(`"session_id":"019f3d67-b1fd-7c0a-87d5-9b46277407ba"`)) || !bytes.Contains(body, []byte(`"entries":62`)) || !bytes.Contains(body, []byte(`"entries":1011`)) {
		t.Errorf("sessions = %s", body)
	}
	// The documented metrics (docs/operations.md "Metrics") that these requests feed,
	// on the dedicated registry served at /metrics.
	req, _ = http.NewRequest("GET", "http://"+addr+"/metrics", nil)
	req.Header.Set("X-Contextd-Token", strings.TrimSpace(string(tok)))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`contextd_http_requests_total{code="200",method="GET",operation="/v1/sessions"} 1`,
		`contextd_http_requests_total{code="401",method="GET",operation="unmatched"} 1`, // refused before routing,
		"# TYPE contextd_http_request_duration_seconds histogram",
		"contextd_sessions 3",
		"contextd_entries 1191", // 62 + 1011 + 118
		"contextd_index_bytes_ingested_total ",
		"contextd_index_entries_ingested_total 1191",
		`contextd_index_skipped_lines_total{reason="invalid_json"} 1`,
		"contextd_index_sync_duration_seconds_count ",
		"contextd_rollovers_pending 0",
		"# TYPE contextd_rollover_duration_seconds histogram",
		`contextd_invalid_archives_total{reason=`,
		"go_goroutines ", "process_resident_memory_bytes ",
	} {
		if !bytes.Contains(metrics, []byte(want)) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no shutdown within 10 s")
	}
	if _, err := os.Stat(filepath.Join(dir, "state", "contextd.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("discovery file after shutdown: %v, want removed", err)
	}
}

// TestRefusesNonLoopback: a non-loopback --addr, or one already in use, is
// refused before the state directory is touched (nothing is created).
func TestRefusesNonLoopback(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "s")
	err := run(t.Context(), []string{"serve", "--addr", "0.0.0.0:0", "--sessions-dir", dir, "--state-dir", state}, env(nil), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--allow-non-loopback") {
		t.Fatalf("err = %v, want a refusal naming --allow-non-loopback", err)
	}
	// From the environment, the refusal names the variable.
	err = run(t.Context(), []string{"serve", "--sessions-dir", dir, "--state-dir", state}, env(map[string]string{"CONTEXTD_ADDR": "0.0.0.0:0"}), io.Discard, io.Discard)
	if want := `CONTEXTD_ADDR="0.0.0.0:0" is not a loopback address`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("err = %v, want one starting %q", err, want)
	}
	if _, err := os.Stat(state); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("state directory after a refused address: %v, want none created", err)
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	err = run(t.Context(), []string{"serve", "--addr", busy.Addr().String(), "--sessions-dir", dir, "--state-dir", state}, env(nil), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "address already in use") || !strings.Contains(err.Error(), "pass another --addr") {
		t.Fatalf("busy address: err = %v, want 'address already in use … pass another --addr'", err)
	}
	if _, err := os.Stat(state); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("state directory after a busy address: %v, want none created", err)
	}
}

func TestDefaultsFollowPi(t *testing.T) {
	c, _, err := parseFlags(serveCmd, nil, env(map[string]string{"PI_CODING_AGENT_DIR": "/a/agent"}), io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.SessionsDir != "/a/agent/sessions" || c.StateDir != "/a/agent/contextd" || c.Addr != "127.0.0.1:7467" {
		t.Errorf("got %+v", c)
	}
	c, _, _ = parseFlags(serveCmd, nil, env(map[string]string{"PI_CODING_AGENT_SESSION_DIR": "/s", "CONTEXTD_ADDR": "127.0.0.1:9"}), io.Discard, io.Discard)
	if c.SessionsDir != "/s" || c.Addr != "127.0.0.1:9" {
		t.Errorf("got %+v", c)
	}
	c, _, _ = parseFlags(serveCmd, []string{"--sessions-dir", "/f"}, env(map[string]string{"CONTEXTD_SESSIONS_DIR": "/e"}), io.Discard, io.Discard)
	if c.SessionsDir != "/f" {
		t.Errorf("flag must win over env: %+v", c)
	}
}

// TestInspect pins the summary of compact.jsonl: v1, 1011 entries, one
// skipped line 1013 (SOURCES.md).
func TestInspect(t *testing.T) {
	var out bytes.Buffer
	if err := run(t.Context(), []string{"inspect", filepath.Join("..", "..", "testdata", "pi-sessions", "compact.jsonl")}, env(nil), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"(version 1)", "entries:   1011", "line 1013: invalid_json"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("inspect output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestReindex(t *testing.T) {
	dir := t.TempDir()
	b, _ := os.ReadFile(filepath.Join("..", "..", "testdata", "pi-tree", "tree-basic.jsonl"))
	os.WriteFile(filepath.Join(dir, "a.jsonl"), b, 0o600)
	var out bytes.Buffer
	if err := run(t.Context(), []string{"reindex", "--sessions-dir", dir, "--state-dir", filepath.Join(dir, "state")}, env(nil), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "reindexed 1 session files") {
		t.Errorf("out = %q", out.String())
	}
}

// TestOwnTokenIsNoLostState: a token the user wrote (docs/security.md: write your
// own when the generated one is weak) in an empty state directory is
// used, and the first start logs no error; neither does a second start
// after a run no extension registered with. A state.db deleted after a
// run (the index stays) is the lost state and is logged at error level
// (TestStateDurabilityAcrossKill9 covers the kills).
func TestOwnTokenIsNoLostState(t *testing.T) {
	dir := t.TempDir()
	sessions, state := filepath.Join(dir, "sessions"), filepath.Join(dir, "state")
	os.MkdirAll(sessions, 0o755)
	os.MkdirAll(state, 0o700)
	tok := "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" // 64 hex characters (SHA-256 of "test")
	if err := os.WriteFile(filepath.Join(state, "token"), []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	lost := "is empty although " + filepath.Join(state, "token") + " and the index of an earlier run exist"
	for _, start := range []string{"first start", "second start"} {
		logs, addr, stop := startServe(t, nil, "--sessions-dir", sessions, "--state-dir", state)
		req, _ := http.NewRequest("GET", "http://"+addr+"/v1/sessions", nil)
		req.Header.Set("X-Contextd-Token", tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		stop()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: GET /v1/sessions with the user's token: %d, want 200", start, resp.StatusCode)
		}
		if strings.Contains(logs.String(), "level=ERROR") {
			t.Errorf("%s with the user's token logged an error:\n%s", start, logs.String())
		}
	}
	for _, n := range []string{"state.db", "state.db-wal", "state.db-shm"} {
		os.Remove(filepath.Join(state, n))
	}
	logs, _, stop := startServe(t, nil, "--sessions-dir", sessions, "--state-dir", state)
	stop()
	if want := "level=ERROR msg=\"state database " + filepath.Join(state, "state.db") + " " + lost; !strings.Contains(logs.String(), want) {
		t.Errorf("state.db deleted after a run: log lacks %q:\n%s", want, logs.String())
	}
}
