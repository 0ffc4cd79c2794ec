package store

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"contextd/session"
)

// TestDecodeEachCacheFollowsReindex: DecodeEach answers a second call from
// its cache with the same bodies, and after the file's bytes change in
// place (same offsets and lengths: "alpha" becomes "omega") and a sync
// re-indexes it, it answers with the new bodies, never the cached ones.
func TestDecodeEachCacheFollowsReindex(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "s.jsonl")
	lines := []string{
		`{"type":"session","version":3,"id":"11111111-2222-3333-4444-555555555555","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}`,
		`{"type":"message","id":"aaaa0001","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"alpha","timestamp":1}}`,
		`{"type":"message","id":"aaaa0002","parentId":"aaaa0001","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"user","content":"second alpha","timestamp":2}}`,
	}
	write := func(ls []string) {
		if err := os.WriteFile(path, []byte(strings.Join(ls, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(lines)
	x := MustOpenIndex(t, root)
	s := x.Session(path)
	texts := func() []string {
		t.Helper()
		if err := s.Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
		var out []string
		err := s.Read(func(v *View) error {
			return v.DecodeEach([]int{0, 1}, func(_ int, _ *session.Entry, d *session.Decoded) error {
				out = append(out, d.Message.Content.Text)
				return nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for range 2 { // the second call is answered from the cache
		if got := texts(); len(got) != 2 || got[0] != "alpha" || got[1] != "second alpha" {
			t.Fatalf("before the change: %q, want [alpha, second alpha]", got)
		}
	}
	for i := range lines[1:] {
		lines[1+i] = strings.Replace(lines[1+i], "alpha", "omega", 1)
	}
	write(lines)
	if got := texts(); len(got) != 2 || got[0] != "omega" || got[1] != "second omega" {
		t.Fatalf("after the bytes changed in place: %q, want [omega, second omega]", got)
	}
}
