package coordinator

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"contextd/history"
)

// lineIDs returns the entry id of each line of a JSONL file ("" for the
// header).
func lineIDs(t *testing.T, lines [][]byte) []string {
	t.Helper()
	ids := make([]string, len(lines))
	for i, l := range lines {
		var e struct{ ID string }
		if err := json.Unmarshal(l, &e); err != nil {
			t.Fatal(err)
		}
		ids[i] = e.ID
	}
	return ids
}

// windowItems is ws as IDs and items (history.Window.All), for cmp.
func windowItems(ws []history.Window) []windowSnap {
	out := make([]windowSnap, len(ws))
	for i := range ws {
		out[i] = windowSnap{ID: ws[i].ID, Items: ws[i].All()}
		if len(out[i].Items) == 0 {
			out[i].Items = nil
		}
	}
	return out
}

type windowSnap struct {
	ID    string
	Items []history.ItemRef
}

// checkWindows compares the (cached) branch and Local windows of leaf
// with a fresh Tree.Branch and history.LocalWindows of the same view.
func checkWindows(t *testing.T, svc *Service, leaf string) {
	t.Helper()
	tg, err := svc.Resolve(t.Context(), lbSession)
	if err != nil {
		t.Fatal(err)
	}
	for _, with := range []func(*Target, string, func(*Branch) error) error{svc.withBranch, svc.withCachedBranch} {
		err = with(tg, leaf, func(b *Branch) error {
			seqs, cycle, err := b.V.Tree.Branch(leaf)
			if err != nil {
				return err
			}
			wantLeaf := leaf
			if wantLeaf == "" {
				wantLeaf = b.V.Tree.Leaf()
			}
			if !slices.Equal(b.Seqs, seqs) || b.Cycle != cycle || b.Leaf != wantLeaf {
				t.Errorf("leaf %q (tree length %d): cached branch differs from a fresh one", leaf, b.V.Tree.Len())
			}
			got := svc.localWindows(b)
			want := history.LocalWindows(b.V.Tree, seqs, b.V.Ref)
			if diff := cmp.Diff(windowItems(want), windowItems(got)); diff != "" {
				t.Errorf("leaf %q (tree length %d): cached windows differ from a fresh build (-fresh +cached):\n%s", leaf, b.V.Tree.Len(), diff)
			}
			gotOrder := svc.localSearchOrder(b, &history.View{Windows: got})
			wantOrder := history.SearchOrder(&history.View{Windows: want})
			if diff := cmp.Diff(history.Collect(wantOrder), history.Collect(gotOrder)); diff != "" {
				t.Errorf("leaf %q (tree length %d): cached search order differs from a fresh one (-fresh +cached):\n%s", leaf, b.V.Tree.Len(), diff)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestLocalWindowsCache: while entries are appended one by one, and after
// the file is rewritten, the Local windows served (exact hits, windows
// extended from an earlier branch, fresh builds) are always those a fresh
// build of the current view gives, for the default leaf and older leaves.
func TestLocalWindowsCache(t *testing.T) {
	data := readFixture(t, "local-basic.jsonl")
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	ids := lineIDs(t, lines)
	svc, dir := localService(t, map[string][]byte{"s.jsonl": nil})
	path := filepath.Join(dir, "s.jsonl")
	write := func(n int) {
		if err := os.WriteFile(path, append(bytes.Join(lines[:n], []byte("\n")), '\n'), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for n := 2; n <= len(lines); n++ {
		write(n)
		checkWindows(t, svc, "")
		checkWindows(t, svc, "") // exact hit
		checkWindows(t, svc, ids[max(1, (n-1)/2)])
		checkWindows(t, svc, ids[n-1])
	}
	// A rewrite (a shorter file, then the whole one again) builds a new
	// tree: nothing of the old one is served.
	write(len(lines) / 3)
	checkWindows(t, svc, "")
	write(len(lines))
	checkWindows(t, svc, "")
	checkWindows(t, svc, ids[len(lines)/2])
}

// TestLocalWindowsCacheConcurrent runs history reads on several goroutines
// while entries are appended (run with -race): every answer equals a
// fresh build of its view.
func TestLocalWindowsCacheConcurrent(t *testing.T) {
	data := readFixture(t, "local-basic.jsonl")
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	ids := lineIDs(t, lines)
	svc, dir := localService(t, map[string][]byte{"s.jsonl": nil})
	path := filepath.Join(dir, "s.jsonl")
	if err := os.WriteFile(path, append(bytes.Join(lines[:20], []byte("\n")), '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				leaf := ""
				if i%3 == 1 {
					leaf = ids[10+i%10]
				}
				checkWindows(t, svc, leaf)
				limit := 25
				if _, err := svc.ListItems(t.Context(), CallContext{SessionID: lbSession, LeafID: leaf}, history.ListItemsArgs{Limit: &limit}); err != nil {
					t.Error(err)
					return
				}
				if _, err := svc.Context(t.Context(), lbSession, ContextRequest{LeafID: leaf}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines[20:] {
		if _, err := f.Write(append(l, '\n')); err != nil {
			t.Fatal(err)
		}
		checkWindows(t, svc, "")
	}
	f.Close()
	close(stop)
	wg.Wait()
}
