package archive

import (
	"testing"
	"time"

	"contextd/session"
	"contextd/store"
)

// A file's index is built without the Archives' lock: while one file's
// build is in progress (held in beforeBuild), the index of another file
// is answered. When the lock was held across Build, the second Index
// waited for the first build to end, which here never comes (the 30 s
// bound only turns that wait into a failure instead of a hung test).
func TestIndexBuildHoldsOffNoOtherFile(t *testing.T) {
	a := New(nil)
	one := &store.View{Path: "/s/one.jsonl", Tree: session.NewTree(session.Header{ID: "one"})}
	other := &store.View{Path: "/s/other.jsonl", Tree: session.NewTree(session.Header{ID: "other"})}
	defer func() { beforeBuild = nil }()
	inBuild := false
	beforeBuild = func(path string) {
		if path != one.Path {
			return
		}
		inBuild = true
		got := make(chan error, 1)
		go func() {
			_, err := a.Index(other)
			got <- err
		}()
		select {
		case err := <-got:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(30 * time.Second):
			t.Error("the index of another file waited for this file's build")
		}
	}
	if _, err := a.Index(one); err != nil {
		t.Fatal(err)
	}
	if !inBuild {
		t.Fatal("the build of one.jsonl never ran")
	}
}
