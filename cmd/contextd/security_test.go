package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStartRefusesUnsafeSettings: a --codex-base-url that does not parse
// is refused at start without echoing its password, and a token file that
// others can read is refused (docs/security.md).
func TestStartRefusesUnsafeSettings(t *testing.T) {
	dir := t.TempDir()
	args := []string{"serve", "--addr", "127.0.0.1:0", "--sessions-dir", dir, "--state-dir", filepath.Join(dir, "s")}
	err := run(t.Context(), append(args, "--codex-base-url", "http://user:hunter2@[::1"), env(nil), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--codex-base-url") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("bad --codex-base-url: %v, want a refusal naming the flag without the password", err)
	}
	state := filepath.Join(dir, "s")
	os.MkdirAll(state, 0o700)
	os.WriteFile(filepath.Join(state, "token"), []byte(strings.Repeat("a", 32)+"\n"), 0o644)
	os.Chmod(filepath.Join(state, "token"), 0o644)
	err = run(t.Context(), args, env(nil), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("world-readable token file: %v, want a refusal saying chmod 600", err)
	}
}
