package api

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadTokenRefusesExposedOrWeak: a token file others can read, or a
// trivially weak token, is refused with what to do; the token contextd
// makes is 64 hex digits in a 0600 file (docs/security.md).
func TestLoadTokenRefusesExposedOrWeak(t *testing.T) {
	dir := t.TempDir()
	made := filepath.Join(dir, "token")
	tok, err := LoadToken(made)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(made); fi.Mode().Perm() != 0o600 || len(tok) != 64 {
		t.Errorf("made token: mode %04o, %d characters; want 0600 and 64", fi.Mode().Perm(), len(tok))
	}
	if again, err := LoadToken(made); err != nil || again != tok {
		t.Errorf("reload: %q %v", again, err)
	}
	cases := []struct {
		name, token string
		mode        os.FileMode
		says        string
	}{
		{"world-readable", tok, 0o644, "chmod 600"},
		{"group-readable", tok, 0o640, "chmod 600"},
		{"32 × a", strings.Repeat("a", 32), 0o600, "weak token"},
		{"repeated", strings.Repeat("0123456789abcdef", 2), 0o600, "repeated"},
		{"short", "abc123", 0o600, "fewer than 32"},
		{"two letters", strings.Repeat("ab", 20) + "ba", 0o600, "weak token"},
	}
	for _, c := range cases {
		p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_"))
		if err := os.WriteFile(p, []byte(c.token+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, c.mode)
		_, err := LoadToken(p)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.says)
		}
		if err != nil && strings.Contains(err.Error(), c.token) {
			t.Errorf("%s: the error repeats the token", c.name)
		}
	}
	// A user-chosen random token of 32 characters is fine.
	p := filepath.Join(dir, "chosen")
	os.WriteFile(p, []byte("Zk3q9VxP2mLr7tBn4WcY8hJd6gFs1aQe\n"), 0o600)
	if got, err := LoadToken(p); err != nil || got != "Zk3q9VxP2mLr7tBn4WcY8hJd6gFs1aQe" {
		t.Errorf("a random 32-character token: %q %v", got, err)
	}
}
