package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestParsePathMap(t *testing.T) {
	m, err := ParsePathMap([]string{"/home/me/.pi/agent/sessions/=/sessions"})
	if err != nil || len(m) != 1 || m[0] != (PathMapping{From: "/home/me/.pi/agent/sessions", To: "/sessions"}) {
		t.Fatalf("got %+v, %v", m, err)
	}
	for _, bad := range []string{"/a", "a=/b", "/a=b", "=/b", ""} {
		if _, err := ParsePathMap([]string{bad}); err == nil {
			t.Errorf("%q accepted; want an error asking for HOST=CONTAINER", bad)
		}
	}
}

func TestMapPath(t *testing.T) {
	maps := []PathMapping{{From: "/home/me/.pi/agent/sessions", To: "/sessions"}, {From: "/home/me/.pi/agent/sessions/--w--", To: "/other"}}
	for in, want := range map[string]string{
		"/home/me/.pi/agent/sessions/--x--/a.jsonl": "/sessions/--x--/a.jsonl",
		"/home/me/.pi/agent/sessions/--w--/b.jsonl": "/other/b.jsonl", // the longest prefix wins
		"/home/me/.pi/agent/sessions":               "/sessions",
		"/home/me/.pi/agent/sessions2/a.jsonl":      "/home/me/.pi/agent/sessions2/a.jsonl", // not a path prefix
		"rel/a.jsonl":                               "rel/a.jsonl",                          // relative paths stay relative to the sessions dir
		"/elsewhere/a.jsonl":                        "/elsewhere/a.jsonl",
	} {
		if got := mapPath(maps, in); got != want {
			t.Errorf("mapPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestResolvePathMap: a host path registered by a Pi outside the container
// resolves to the file under the container's sessions directory.
func TestResolvePathMap(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "--w--"), 0o755)
	os.WriteFile(filepath.Join(root, "--w--", "a.jsonl"), []byte("{}\n"), 0o600)
	x, err := OpenIndex(context.Background(), root, filepath.Join(t.TempDir(), "index"), Options{PathMap: []PathMapping{{From: "/home/me/.pi/agent/sessions", To: root}}})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	got, err := x.Resolve("/home/me/.pi/agent/sessions/--w--/a.jsonl")
	if want := filepath.Join(x.Root(), "--w--", "a.jsonl"); err != nil || got != want {
		t.Errorf("Resolve = %q, %v; want %q", got, err, want)
	}
	if _, err := x.Resolve("/home/me/other/a.jsonl"); !errors.Is(err, ErrOutside) {
		t.Errorf("unmapped host path: err = %v, want ErrOutside", err)
	}
}
