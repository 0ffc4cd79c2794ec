package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"contextd/api"
	"contextd/discovery"
	"contextd/internal/testkit"
)

// unixClient is an HTTP client whose every request goes to the socket.
func unixClient(sock string) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
	}}
}

// TestServeUnixSocket: serve listens on <state-dir>/contextd.sock (mode
// 0600 in the 0700 state directory) besides TCP and names it in the
// discovery file; over the socket, /v1/proof answers HMAC-SHA256(token,
// "contextd-proof-v1:"+challenge) without the token, the token routes
// answer with it, and a 401 names the token file. A socket a crashed run
// left is replaced; the socket is removed on shutdown.
func TestServeUnixSocket(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	sessions := filepath.Join(dir, "sessions")
	os.MkdirAll(sessions, 0o700)
	os.MkdirAll(state, 0o700)
	sock := filepath.Join(state, "contextd.sock")
	// A crashed run's socket: bound, never closed (unlink disabled).
	stale, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	stale.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	stderr := &testkit.LockedBuffer{}
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--state-dir", state, "--sessions-dir", sessions}, env(nil), io.Discard, stderr)
	}()
	testkit.WaitServing(t, state, os.Getpid(), 30*time.Second, stderr.String)
	info, err := discovery.Read(state)
	if err != nil || info.Socket != sock {
		t.Fatalf("discovery = %+v (%v), want socket %s", info, err, sock)
	}
	fi, err := os.Lstat(sock)
	if err != nil || fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %v (%v), want a socket of mode 0600", fi, err)
	}
	tok, _ := os.ReadFile(filepath.Join(state, "token"))
	token := strings.TrimSpace(string(tok))
	cl := unixClient(sock)
	get := func(path, tok string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "http://localhost"+path, nil)
		if tok != "" {
			req.Header.Set(api.TokenHeader, tok)
		}
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	ch := make([]byte, 32)
	rand.Read(ch)
	challenge := hex.EncodeToString(ch)
	code, body := get("/v1/proof?challenge="+challenge, "")
	var p struct{ Proof string }
	if code != 200 || json.Unmarshal(body, &p) != nil || p.Proof != api.Proof(token, challenge) || len(p.Proof) != 64 {
		t.Errorf("proof over the socket: %d %s, want 200 with the 64-digit HMAC", code, body)
	}
	if code, body := get("/v1/sessions", token); code != 200 || !strings.Contains(string(body), `"sessions"`) {
		t.Errorf("/v1/sessions with the token: %d %s", code, body)
	}
	if code, body := get("/v1/sessions", "wrong"); code != 401 || !strings.Contains(string(body), filepath.Join(state, "token")) {
		t.Errorf("wrong token: %d %s, want 401 naming %s", code, body, filepath.Join(state, "token"))
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
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Errorf("socket after shutdown: %v, want removed", err)
	}
}

// TestSocketOffAndRefusals: --socket off serves TCP only (no socket in the
// discovery file); a relative --socket and a path holding a regular file
// are refused with what to pass.
func TestSocketOffAndRefusals(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	_, _, err := parseFlags(serveCmd, []string{"--socket", "rel.sock"}, env(nil), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `--socket "rel.sock" is not an absolute path`) {
		t.Errorf("relative socket: %v", err)
	}
	os.MkdirAll(state, 0o700)
	os.WriteFile(filepath.Join(state, "contextd.sock"), []byte("x"), 0o600)
	err = run(t.Context(), []string{"serve", "--addr", "127.0.0.1:0", "--state-dir", state, "--sessions-dir", dir}, env(nil), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "exists and is not a socket") {
		t.Errorf("file at the socket path: %v", err)
	}
	os.Remove(filepath.Join(state, "contextd.sock"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	stderr := &testkit.LockedBuffer{}
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--socket", "off", "--state-dir", state, "--sessions-dir", dir}, env(nil), io.Discard, stderr)
	}()
	testkit.WaitServing(t, state, os.Getpid(), 30*time.Second, stderr.String)
	if info, err := discovery.Read(state); err != nil || info.Socket != "" {
		t.Errorf("--socket off: discovery %+v (%v), want no socket", info, err)
	}
	if _, err := os.Lstat(filepath.Join(state, "contextd.sock")); !os.IsNotExist(err) {
		t.Errorf("--socket off: %v, want no socket file", err)
	}
	cancel()
	<-done
}
