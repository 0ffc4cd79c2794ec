package main

// contextd's own state across kill -9 (docs/reliability.md) and an unreadable
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

// TestStateSurvivesKill9: a Local rollover is taken step by step
// (create, settle, commit, then the planned boundary appended as Pi would
// and complete), and contextd is killed with SIGKILL right after the
// answer of each step in turn. Then state.db-wal is kept, removed or
// overwritten with garbage, or the whole state database is removed. The
// next start serves every acknowledged write: the registration (mode,
// agent) and the rollover in the state its last answer gave. With the
// state database gone next to the token file, the start logs an error
// saying the state was lost, and the window chain still continues from
// the file (POST …/windows: first false, previous = the file's current
// window).
func TestStateSurvivesKill9(t *testing.T) {
	local, err := os.ReadFile(filepath.Join("..", "..", "testdata", "pi-tree", "local-basic.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	type window struct {
		FirstWindowID    string `json:"firstWindowId"`
		CurrentWindowID  string `json:"currentWindowId"`
		PreviousWindowID string `json:"previousWindowId"`
		WindowNumber     int    `json:"windowNumber"`
	}
	type stateAnswer struct {
		Mode         string `json:"mode"`
		Registered   bool   `json:"registered"`
		Leaf         string `json:"leaf"`
		Window       window `json:"window"`
		Registration struct {
			AgentName string `json:"agent_name"`
		} `json:"registration"`
		Rollover *struct {
			RolloverID string `json:"rollover_id"`
			State      string `json:"state"`
		} `json:"rollover"`
	}
	base := "/v1/sessions/" + localBasicID
	steps := []string{"create", "settle", "commit", "complete"}
	for last, step := range steps {
		for _, loss := range []string{"wal-kept", "wal-removed", "wal-damaged", "state-removed"} {
			t.Run(step+"/"+loss, func(t *testing.T) {
				dir := t.TempDir()
				sessions, state := filepath.Join(dir, "sessions"), filepath.Join(dir, "state")
				file := filepath.Join(sessions, "local-basic.jsonl")
				os.MkdirAll(sessions, 0o700)
				if err := os.WriteFile(file, local, 0o600); err != nil {
					t.Fatal(err)
				}
				c := startChild(t, sessions, state)
				c.must("PUT", base, map[string]any{"session_file": "local-basic.jsonl", "mode": "local", "agent_name": "/root/worker"})
				var before stateAnswer
				json.Unmarshal(c.must("GET", base, nil), &before)
				var rid string
				var next window // the window the commit opens
				for _, s := range steps[:last+1] {
					switch s {
					case "create":
						var a struct {
							RolloverID string `json:"rollover_id"`
						}
						json.Unmarshal(c.must("POST", base+"/rollovers", map[string]any{}), &a)
						rid = a.RolloverID
					case "settle":
						c.must("POST", base+"/rollovers/"+rid+"/settle", map[string]any{})
					case "commit":
						var a struct {
							Window window            `json:"window"`
							Append []json.RawMessage `json:"append"`
						}
						json.Unmarshal(c.must("POST", base+"/rollovers/"+rid+"/commit", map[string]any{}), &a)
						next = a.Window
						if len(a.Append) != 1 {
							t.Fatalf("local commit appends %d entries, want 1", len(a.Append))
						}
						if step == "complete" {
							// Pi appends the boundary (pi.sendMessage).
							var e map[string]any
							json.Unmarshal(a.Append[0], &e)
							e["id"], e["parentId"], e["timestamp"] = "k9000001", before.Leaf, "2026-11-30T23:59:00.000Z"
							line, _ := json.Marshal(e)
							f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
							if err != nil {
								t.Fatal(err)
							}
							f.Write(append(line, '\n'))
							f.Close()
						}
					case "complete":
						c.must("POST", base+"/rollovers/"+rid+"/complete", nil)
					}
				}
				c.kill9()
				walPath := filepath.Join(state, "state.db-wal")
				switch loss {
				case "wal-removed":
					os.Remove(walPath)
					os.Remove(filepath.Join(state, "state.db-shm"))
				case "wal-damaged":
					if err := os.WriteFile(walPath, []byte(strings.Repeat("garbage!", 1024)), 0o600); err != nil {
						t.Fatal(err)
					}
				case "state-removed":
					for _, n := range []string{"state.db", "state.db-wal", "state.db-shm"} {
						os.Remove(filepath.Join(state, n))
					}
				}
				c = startChild(t, sessions, state)
				defer c.stop()
				var st stateAnswer
				if err := json.Unmarshal(c.must("GET", base, nil), &st); err != nil {
					t.Fatal(err)
				}
				lostLog := "level=ERROR msg=\"state database " + filepath.Join(state, "state.db") + " is empty although " + filepath.Join(state, "token") + " and the index of an earlier run exist"
				if loss == "state-removed" {
					if !strings.Contains(c.log(), lostLog) {
						t.Errorf("log lacks %q:\n%s", lostLog, c.log())
					}
					// The chain continues from the file.
					want := before.Window
					if step == "complete" {
						want = next
					}
					var w struct {
						First  bool   `json:"first"`
						Window window `json:"window"`
					}
					json.Unmarshal(c.must("POST", base+"/windows", map[string]any{}), &w)
					if w.First || w.Window.FirstWindowID != want.FirstWindowID || w.Window.PreviousWindowID != want.CurrentWindowID || w.Window.WindowNumber != want.WindowNumber+1 {
						t.Errorf("/windows after the state was lost: %+v; want the chain continued from %+v", w, want)
					}
					return
				}
				if strings.Contains(c.log(), "is empty although") {
					t.Errorf("state reported lost although it survived:\n%s", c.log())
				}
				wantState := map[string]string{"create": "pending", "settle": "settled", "commit": "committed", "complete": ""}[step]
				gotState := ""
				if st.Rollover != nil {
					gotState = st.Rollover.State
					if st.Rollover.RolloverID != rid {
						t.Errorf("open rollover %s, want %s", st.Rollover.RolloverID, rid)
					}
				}
				if !st.Registered || st.Mode != "local" || st.Registration.AgentName != "/root/worker" || gotState != wantState {
					t.Errorf("after kill -9 (%s): %+v rollover state %q; want registered, local, agent /root/worker, rollover %q\n%s", loss, st, gotState, wantState, c.log())
				}
				if step == "complete" {
					var info struct {
						State string `json:"state"`
					}
					json.Unmarshal(c.must("GET", base+"/rollovers/"+rid, nil), &info)
					if info.State != "completed" {
						t.Errorf("rollover %s is %q after kill -9, want completed", rid, info.State)
					}
				}
			})
		}
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
