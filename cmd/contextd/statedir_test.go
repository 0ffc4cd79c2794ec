package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"contextd/internal/testkit"
)

// TestStateDirOfAnotherUser: a state directory of another user that
// others may write is refused at start with the fix (at a03e7ac it was
// used silently, and its owner could replace contextd.json, which the
// extension trusts); one that only its owner may write is used with a
// warning naming the fix (a container's volume). Needs root to chown.
func TestStateDirOfAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a directory to another user needs root")
	}
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if err := os.Mkdir(state, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(state, 0o777)
	if err := os.Chown(state, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	err := run(t.Context(), []string{"serve", "--addr", "127.0.0.1:0", "--state-dir", state, "--sessions-dir", dir}, env(nil), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "belongs to uid 65534, not to you (uid 0), and others may write it (mode 0777)") || !strings.Contains(err.Error(), "chmod 700 "+state) {
		t.Fatalf("err = %v, want a refusal naming the owner, the mode and the fix", err)
	}
	if _, err := os.Stat(filepath.Join(state, "token")); !os.IsNotExist(err) {
		t.Errorf("token in the refused directory: %v, want none made", err)
	}
	os.Chmod(state, 0o755)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	stderr := &testkit.LockedBuffer{}
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--state-dir", state, "--sessions-dir", dir}, env(nil), io.Discard, stderr)
	}()
	testkit.WaitServing(t, state, os.Getpid(), 30*time.Second, stderr.String)
	cancel()
	<-done
	if !strings.Contains(stderr.String(), "belongs to uid 65534, not to uid 0 that contextd runs as") {
		t.Errorf("log lacks the warning about the owner:\n%s", stderr.String())
	}
}
