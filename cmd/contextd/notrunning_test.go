package main

import (
	"os"
	"path/filepath"
	"testing"

	"contextd/discovery"
)

// TestClientCommandsSayContextdIsNotRunning: a client command that finds
// nothing listening where contextd should be says so in one sentence
// naming the address and the command that starts contextd there
// (serveCommand: --addr unless it is the default, --state-dir unless it
// is ~/.pi/agent/contextd, as extension/src/client.ts serveCommand), and
// main prints that sentence without its "contextd: " prefix.
func TestClientCommandsSayContextdIsNotRunning(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	addr := closedAddr(t)
	state := filepath.Join(t.TempDir(), "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}

	// --addr of a closed port, default state directory.
	_, _, err := runCLI(t, nil, "healthcheck", "--addr", addr)
	want := "contextd is not running at http://" + addr + "; start it with `contextd serve --addr " + addr + "`"
	if err == nil || err.Error() != want {
		t.Errorf("healthcheck --addr %s: %v\nwant %s", addr, err, want)
	}
	if got := errorLine(err); got != want {
		t.Errorf("main prints %q, want %q", got, want)
	}

	// A discovery file left by a contextd that is gone names a closed
	// port: start contextd for that state directory again.
	if err := discovery.Write(state, discovery.Info{URL: "http://" + addr, PID: 0, Version: "test"}); err != nil {
		t.Fatal(err)
	}
	_, _, err = runCLI(t, nil, "healthcheck", "--state-dir", state)
	want = "contextd is not running at http://" + addr + "; start it with `contextd serve --state-dir " + state + "`"
	if err == nil || err.Error() != want {
		t.Errorf("healthcheck --state-dir (stale discovery file): %v\nwant %s", err, want)
	}
	if err := os.WriteFile(filepath.Join(state, "token"), []byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err = runCLI(t, nil, "sessions", "--state-dir", state)
	if err == nil || err.Error() != want {
		t.Errorf("sessions --state-dir (stale discovery file): %v\nwant %s", err, want)
	}

	// A discovery file naming a socket that is gone: the socket is the
	// address.
	sock := filepath.Join(state, "contextd.sock")
	if err := discovery.Write(state, discovery.Info{URL: "http://" + addr, Socket: sock, Version: "test"}); err != nil {
		t.Fatal(err)
	}
	_, _, err = runCLI(t, nil, "healthcheck", "--state-dir", state)
	want = "contextd is not running at unix:" + sock + "; start it with `contextd serve --state-dir " + state + "`"
	if err == nil || err.Error() != want {
		t.Errorf("healthcheck --state-dir (socket gone): %v\nwant %s", err, want)
	}

	// The default state directory: plain `contextd serve`.
	def := filepath.Join(home, ".pi", "agent", "contextd")
	if got := serveCommand(def, defaultAddr, home); got != "contextd serve" {
		t.Errorf("serveCommand(default) = %q, want contextd serve", got)
	}
	if got := serveCommand("/tmp/it's here", defaultAddr, home); got != `contextd serve --state-dir '/tmp/it'\''s here'` {
		t.Errorf("serveCommand(quoted) = %q", got)
	}
}
