package main

// contextd's own state across kill -9 (issue 11 item 5) and an unreadable
// sessions directory (item 7), against the real service in a separate
// process.

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// kill9 sends SIGKILL and waits for the process to be gone.
func (c *child) kill9() {
	c.t.Helper()
	c.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-c.exited:
	case <-time.After(30 * time.Second):
		c.t.Fatal("contextd still running 30 s after SIGKILL")
	}
}

// TestStateSurvivesKill9: a registration and a rollover taken to settled
// are answered, contextd is killed with SIGKILL right after the last
// answer, and state.db-wal is then kept, removed or overwritten with
// garbage. The next start serves all of it: the registration (mode,
// agent) and the settled rollover. With state.db itself gone next to the
// token file, the start logs an error saying the state was lost.
func TestStateSurvivesKill9(t *testing.T) {
	local, err := os.ReadFile(filepath.Join("..", "..", "testdata", "pi-tree", "local-basic.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, wal := range []string{"kept", "removed", "damaged"} {
		t.Run("wal-"+wal, func(t *testing.T) {
			dir := t.TempDir()
			sessions, state := filepath.Join(dir, "sessions"), filepath.Join(dir, "state")
			os.MkdirAll(sessions, 0o700)
			if err := os.WriteFile(filepath.Join(sessions, "local-basic.jsonl"), local, 0o600); err != nil {
				t.Fatal(err)
			}
			c := startChild(t, sessions, state)
			c.must("PUT", "/v1/sessions/"+localBasicID, map[string]any{"session_file": "local-basic.jsonl", "mode": "local", "agent_name": "/root/worker"})
			var created struct {
				RolloverID string `json:"rollover_id"`
			}
			if err := json.Unmarshal(c.must("POST", "/v1/sessions/"+localBasicID+"/rollovers", map[string]any{}), &created); err != nil || created.RolloverID == "" {
				t.Fatalf("create rollover: %v %+v", err, created)
			}
			c.must("POST", "/v1/sessions/"+localBasicID+"/rollovers/"+created.RolloverID+"/settle", map[string]any{})
			c.kill9()
			walPath := filepath.Join(state, "state.db-wal")
			switch wal {
			case "removed":
				os.Remove(walPath)
				os.Remove(filepath.Join(state, "state.db-shm"))
			case "damaged":
				if err := os.WriteFile(walPath, []byte(strings.Repeat("garbage!", 1024)), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			c = startChild(t, sessions, state)
			var st struct {
				Mode         string `json:"mode"`
				Registered   bool   `json:"registered"`
				Registration struct {
					AgentName string `json:"agent_name"`
				} `json:"registration"`
				Rollover *struct {
					RolloverID string `json:"rollover_id"`
					State      string `json:"state"`
				} `json:"rollover"`
			}
			if err := json.Unmarshal(c.must("GET", "/v1/sessions/"+localBasicID, nil), &st); err != nil {
				t.Fatal(err)
			}
			if !st.Registered || st.Mode != "local" || st.Registration.AgentName != "/root/worker" || st.Rollover == nil ||
				st.Rollover.RolloverID != created.RolloverID || st.Rollover.State != "settled" {
				t.Errorf("after kill -9 (WAL %s): %+v; want registered, local, agent /root/worker, rollover %s settled\n%s", wal, st, created.RolloverID, c.log())
			}
			if strings.Contains(c.log(), "is empty although") {
				t.Errorf("state reported lost although it survived:\n%s", c.log())
			}
			c.stop()
			// state.db gone, the token file still there: said loudly.
			for _, n := range []string{"state.db", "state.db-wal", "state.db-shm"} {
				os.Remove(filepath.Join(state, n))
			}
			c = startChild(t, sessions, state)
			want := "level=ERROR msg=\"state database " + filepath.Join(state, "state.db") + " is empty although " + filepath.Join(state, "token") + " exists"
			if !strings.Contains(c.log(), want) {
				t.Errorf("log lacks %q:\n%s", want, c.log())
			}
			c.stop()
		})
	}
}

// TestUnreadableSessionsDir: a sessions directory contextd's user cannot
// list is a start-up warning naming it and the fix, and the routes that
// list it answer 503 with a sentence naming the directory and the fix,
// never 500. As root (who reads any directory) the service runs as nobody
// (uid 65534).
func TestUnreadableSessionsDir(t *testing.T) {
	base, err := os.MkdirTemp("", "contextd-unreadable-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(base, "sessions"), 0o700); os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	sessions, state := filepath.Join(base, "sessions"), filepath.Join(base, "state")
	os.MkdirAll(sessions, 0o700)
	os.MkdirAll(state, 0o700)
	var opts []func(*exec.Cmd)
	if os.Geteuid() == 0 {
		// nobody must be able to run the test binary: copy it where it can.
		bin := filepath.Join(base, "contextd.test")
		copyExecutable(t, os.Args[0], bin)
		os.Chown(state, 65534, 65534)
		opts = append(opts, func(cmd *exec.Cmd) {
			cmd.Path, cmd.Args[0] = bin, bin
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
			cmd.Env = append(cmd.Env, "HOME="+state, "GOCACHE="+filepath.Join(state, "gocache"))
		})
	}
	if err := os.Chmod(sessions, 0o000); err != nil {
		t.Fatal(err)
	}
	c := startChild(t, sessions, state, opts...)
	if want := "level=WARN msg=\"sessions directory " + sessions + " (from --sessions-dir) cannot be listed"; !strings.Contains(c.log(), want) {
		t.Errorf("log lacks %q:\n%s", want, c.log())
	}
	for _, r := range []struct{ method, path string }{
		{"GET", "/v1/sessions"},
		{"GET", "/v1/sessions/019f3776-3d33-70c6-baa2-5155ff71613c"},
		{"POST", "/v1/index/rebuild"},
	} {
		st, b, err := c.do(r.method, r.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		var p struct{ Detail string }
		json.Unmarshal(b, &p)
		if st != http.StatusServiceUnavailable || !strings.Contains(p.Detail, "cannot list the sessions directory "+sessions+" (permission denied)") || !strings.Contains(p.Detail, "chmod u+rx") {
			t.Errorf("%s %s: %d %s; want 503 naming %s, permission denied and chmod u+rx", r.method, r.path, st, b, sessions)
		}
	}
	c.stop()
}

func copyExecutable(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
