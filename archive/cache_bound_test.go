package archive

import (
	"fmt"
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
