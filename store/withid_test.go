package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"contextd/bench/sessiongen"
)

// TestWithIDReadsRowsOncePerDatabase: WithID reads the rows of a session
// id from the database once per database (index.go idsRead), and still
// finds every file of the id. A file indexed in an earlier run is found
// by its row (one query); the next WithID queries nothing and finds it
// again; a copy synced since (a row written by a session in byPath) is
// found without a query; after Rebuild (a new database) the rows are read
// once more. An id no file has is queried each time (not kept).
func TestWithIDReadsRowsOncePerDatabase(t *testing.T) {
	ctx := context.Background()
	root, dir := t.TempDir(), t.TempDir()
	a, b := filepath.Join(root, "a.jsonl"), filepath.Join(root, "b.jsonl")
	body := sessiongen.TinyChain("s1", 5)
	if err := os.WriteFile(a, body, 0o600); err != nil {
		t.Fatal(err)
	}
	x, err := OpenIndex(ctx, root, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Session(a).Sync(ctx); err != nil {
		t.Fatal(err)
	}
	x.Close()
	if err := os.WriteFile(b, body, 0o600); err != nil {
		t.Fatal(err)
	}

	x, err = OpenIndex(ctx, root, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	withID := func(what string, wantQueries int64, want ...string) {
		t.Helper()
		withIDOf(t, x, "s1", what, wantQueries, want...)
	}
	withID("first, in a new run", 1, a)
	if n := x.Session(a).Len(); n != 5 {
		t.Fatalf("a after WithID: %d entries, want 5", n)
	}
	withID("again", 0, a)
	withIDOf(t, x, "nobody", "an unknown id", 1)
	withIDOf(t, x, "nobody", "an unknown id, again", 1)
	if err := x.Session(b).Sync(ctx); err != nil {
		t.Fatal(err)
	}
	withID("after the copy's sync", 0, a, b)
	if err := x.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	withID("after Rebuild", 1, a, b)
	withID("after Rebuild, again", 0, a, b)
}

// withIDOf checks that WithID(id) ran wantQueries queries and returned
// the sessions of want, in order.
func withIDOf(t *testing.T, x *Index, id, what string, wantQueries int64, want ...string) {
	t.Helper()
	before := idQueries.Load()
	got, err := x.WithID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, s := range got {
		paths = append(paths, s.Path())
	}
	if n := idQueries.Load() - before; n != wantQueries || len(paths) != len(want) {
		t.Fatalf("%s: %d queries, paths %v; want %d, %v", what, n, paths, wantQueries, want)
	}
	for i := range want {
		if paths[i] != want[i] {
			t.Fatalf("%s: paths %v, want %v", what, paths, want)
		}
	}
}
