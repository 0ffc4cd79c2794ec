package archive

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"contextd/session"
	"contextd/store"
)

// Archives keeps the indexes of at most maxFiles session files, dropping
// the least recently indexed: a file read again after others stays.
func TestArchivesKeepsAtMostMaxFiles(t *testing.T) {
	a := New(nil)
	view := func(i int) *store.View {
		return &store.View{Path: fmt.Sprintf("/s/%d.jsonl", i), Tree: session.NewTree(session.Header{ID: fmt.Sprint(i)})}
	}
	first := view(0)
	for i := range 3 * maxFiles {
		if _, err := a.Index(view(i)); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Index(first); err != nil { // read often: kept
			t.Fatal(err)
		}
	}
	if n := len(a.byPath); n != maxFiles {
		t.Errorf("%d files cached, want %d", n, maxFiles)
	}
	if _, ok := a.byPath[first.Path]; !ok {
		t.Error("the file read after every other was dropped")
	}
	if _, ok := a.byPath[view(1).Path]; ok {
		t.Error("a file not read for 3×maxFiles reads is still cached")
	}
}

// The invalid manifests already counted are kept for the same files as
// the indexes (maxFiles): reading 3×maxFiles files that each hold one
// invalid manifest leaves the counts of maxFiles files, and a file still
// cached is not counted twice.
func TestArchivesCountedKeepsAtMostMaxFiles(t *testing.T) {
	calls := 0
	a := New(func(string) { calls++ })
	views := invalidManifestViews(t, 3*maxFiles+1)
	first := views[3*maxFiles]
	for i := range 3 * maxFiles {
		if _, err := a.Index(views[i]); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Index(first); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(a.counted); n != maxFiles {
		t.Errorf("invalid manifests counted for %d files, want %d", n, maxFiles)
	}
	// One count per file read: first once, each of the others once.
	if want := 3*maxFiles + 1; calls != want {
		t.Errorf("invalid called %d times, want %d", calls, want)
	}
}

// invalidManifestViews indexes n sessions, each holding one Tree archive
// manifest that is malformed ({"protocol":1}), and returns a view of each.
func invalidManifestViews(t *testing.T, n int) []*store.View {
	t.Helper()
	root := t.TempDir()
	x, err := store.OpenIndex(t.Context(), root, filepath.Join(t.TempDir(), "index"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	var views []*store.View
	for i := range n {
		path := filepath.Join(root, fmt.Sprintf("s%d.jsonl", i))
		lines := `{"type":"session","version":3,"id":"inv","timestamp":"2026-07-07T16:27:13.789Z","cwd":"/tmp"}
{"type":"custom","customType":"` + session.CustomTypeTreeArchive + `","data":{"protocol":1},"id":"m1","parentId":null,"timestamp":"2026-07-07T16:27:13.789Z"}
`
		if err := os.WriteFile(path, []byte(lines), 0o600); err != nil {
			t.Fatal(err)
		}
		rp, err := x.Resolve(path)
		if err != nil {
			t.Fatal(err)
		}
		sess := x.Session(rp)
		if err := sess.Sync(t.Context()); err != nil {
			t.Fatal(err)
		}
		var v store.View
		if err := sess.Read(func(r *store.View) error { v = *r; return nil }); err != nil {
			t.Fatal(err)
		}
		views = append(views, &v)
	}
	return views
}
