package store

import (
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// indexRows counts the rows of the derived index's tables and the files
// under texts/.
func indexRows(t *testing.T, x *Index) (sessions, entryBlocks, calls, files int) {
	t.Helper()
	for _, q := range []struct {
		sql string
		n   *int
	}{{"SELECT count(*) FROM sessions", &sessions}, {"SELECT count(*) FROM entry_blocks", &entryBlocks}, {"SELECT count(*) FROM tool_calls", &calls}} {
		if err := x.db.Reader.QueryRow(q.sql).Scan(q.n); err != nil {
			t.Fatal(err)
		}
	}
	ents, err := os.ReadDir(x.textDir())
	if err != nil {
		t.Fatal(err)
	}
	return sessions, entryBlocks, calls, len(ents)
}

// TestScanHeadersIndexesNothing: a header scan of the fixtures (and of an
// empty file, a file that is not a session and a file whose header
// follows a blank line) reports each file's header, size and state as a
// sync would, and creates no index row, no item-text file and no session
// object.
func TestScanHeadersIndexesNothing(t *testing.T) {
	root := t.TempDir()
	names, hashes := copyFixtures(t, root)
	extra := map[string]string{
		"empty.jsonl":   "",
		"partial.jsonl": `{"type":"session","id":"s-partial"`, // no complete line yet
		"notpi.jsonl":   `{"type":"message","id":"a"}` + "\n",
		"blank.jsonl":   "\n" + `{"type":"session","version":3,"id":"s-blank","cwd":"/w"}` + "\n",
	}
	for n, body := range extra {
		if err := os.WriteFile(filepath.Join(root, n), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	x := MustOpenIndex(t, root)
	heads, err := x.ScanHeaders(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(heads) != len(names)+len(extra) {
		t.Fatalf("%d headers, want %d", len(heads), len(names)+len(extra))
	}
	got := map[string]FileHeader{}
	for _, h := range heads {
		got[filepath.Base(h.Path)] = h
	}
	for n, st := range map[string]FileState{"empty.jsonl": StateEmpty, "partial.jsonl": StateEmpty, "notpi.jsonl": StateNotPi, "blank.jsonl": StateOK} {
		if got[n].State != st || got[n].Undecided {
			t.Errorf("%s: state %q (undecided %v), want %q", n, got[n].State, got[n].Undecided, st)
		}
	}
	if h := got["blank.jsonl"].Header; h == nil || h.ID != "s-blank" || h.Version != 3 || h.Cwd != "/w" {
		t.Errorf("blank.jsonl header = %+v, want s-blank v3 /w", h)
	}
	// The headers are those a full index reads: checked against a second
	// index that syncs every fixture.
	ref := MustOpenIndex(t, root)
	ss, err := ref.SyncAll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ss {
		h := got[filepath.Base(s.Path())]
		fi, err := os.Stat(s.Path())
		if err != nil {
			t.Fatal(err)
		}
		_ = s.Read(func(v *View) error {
			if h.State != v.State || h.Size != fi.Size() || !h.ModTime.Equal(fi.ModTime()) {
				t.Errorf("%s: scan says %s %d bytes %v; sync says %s, the file %d bytes %v", s.Path(), h.State, h.Size, h.ModTime, v.State, fi.Size(), fi.ModTime())
			}
			if v.Tree != nil && (h.Header == nil || *h.Header != v.Tree.Header) {
				t.Errorf("%s: scan header %+v, indexed header %+v", s.Path(), h.Header, v.Tree.Header)
			}
			return nil
		})
	}
	// Nothing was indexed by the scan, and a second scan reads from its
	// cache the same answers.
	if s, b, c, f := indexRows(t, x); s+b+c+f != 0 {
		t.Errorf("after a header scan: %d session rows, %d entry blocks, %d tool calls, %d text files; want none", s, b, c, f)
	}
	if n := len(x.Sessions()); n != 0 {
		t.Errorf("after a header scan: %d session objects, want 0", n)
	}
	again, err := x.ScanHeaders(nil)
	if err != nil || !cmp.Equal(again, heads) {
		t.Errorf("second scan differs: %v\n%s", err, cmp.Diff(heads, again))
	}
	for _, n := range names {
		b, _ := os.ReadFile(filepath.Join(root, n))
		if sha256.Sum256(b) != hashes[n] {
			t.Errorf("%s changed", n)
		}
	}
}

// TestEvictionRebuildsEqual: with a budget of 1 byte, every session but
// the most recently used one is evicted whole (rows and text files gone,
// counted in the usage), and a later sync of an evicted session answers
// exactly as before and as a fresh index of the same files.
func TestEvictionRebuildsEqual(t *testing.T) {
	root := t.TempDir()
	names, _ := copyFixtures(t, root)
	ctx := context.Background()
	x := MustOpenIndex(t, root)
	ss, err := x.SyncAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := map[string]snapshot{}
	for _, s := range ss {
		before[s.Path()] = snap(t, s)
	}
	u, err := x.Usage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if u.Sessions != len(names) || u.UsedBytes <= 0 || u.Evictions != 0 || u.BudgetBytes != 0 {
		t.Fatalf("usage before = %+v, want %d sessions, bytes used, no budget and no eviction", u, len(names))
	}
	// The most recently used: the last synced.
	mru := ss[0]
	for _, s := range ss {
		if s.used.Load() > mru.used.Load() {
			mru = s
		}
	}
	x.SetMaxIndexBytes(1)
	u, err = x.EnforceBudget(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if u.Sessions != 1 || u.Evictions != int64(len(names)-1) || u.EvictedBytes <= 0 || u.BudgetBytes != 1 {
		t.Errorf("usage after = %+v, want 1 session left and %d evictions", u, len(names)-1)
	}
	if paths, err := x.IndexedPaths(); err != nil || len(paths) != 1 || !paths[mru.Path()] {
		t.Errorf("indexed after eviction: %v %v, want only %s", paths, err, mru.Path())
	}
	if s, _, _, _ := indexRows(t, x); s != 1 {
		t.Errorf("%d session rows after eviction, want 1", s)
	}
	x.SetMaxIndexBytes(0)
	fresh := MustOpenIndex(t, root)
	for _, s := range ss {
		if s != mru && s.Indexed() {
			t.Errorf("%s still loaded after its eviction", s.Path())
		}
		if err := s.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(before[s.Path()], snap(t, s)); d != "" {
			t.Errorf("%s after eviction and re-index differs (-before +after):\n%s", s.Path(), d)
		}
		f := fresh.Session(s.Path())
		if err := f.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(snap(t, f), snap(t, s)); d != "" {
			t.Errorf("%s after eviction differs from a fresh index (-fresh +evicted):\n%s", s.Path(), d)
		}
	}
}

// TestEvictionDoesNotBlockOtherSessions: while session B is being evicted
// (its locks held, stopped in beforeEvict), session A syncs new lines and
// answers reads and searches; B's eviction then completes.
func TestEvictionDoesNotBlockOtherSessions(t *testing.T) {
	root := t.TempDir()
	copyFixtures(t, root)
	ctx := context.Background()
	x := MustOpenIndex(t, root)
	b := x.Session(filepath.Join(root, "tree-basic.jsonl"))
	a := x.Session(filepath.Join(root, "local-basic.jsonl"))
	for _, s := range []*Session{b, a} { // a last: the most recently used
		if err := s.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	entered, release := make(chan string, 1), make(chan struct{})
	beforeEvict = func(path string) {
		entered <- path
		<-release
	}
	t.Cleanup(func() { beforeEvict = nil })
	x.SetMaxIndexBytes(1)
	done := make(chan error, 1)
	go func() {
		_, err := x.EnforceBudget(ctx)
		done <- err
	}()
	if p := <-entered; p != b.Path() {
		t.Fatalf("evicting %s, want %s", p, b.Path())
	}
	// B is held mid-eviction: A appends, syncs and answers.
	line := `{"type":"message","id":"evict-a1","parentId":"588752ae","timestamp":"2026-07-07T16:27:13.789Z","message":{"role":"user","content":"needle-during-eviction","timestamp":1}}` + "\n"
	f, err := os.OpenFile(a.Path(), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(line)
	f.Close()
	answered := make(chan error, 1)
	go func() {
		if err := a.Sync(ctx); err != nil {
			answered <- err
			return
		}
		answered <- a.Read(func(v *View) error {
			if v.Tree == nil || v.Tree.Leaf() != "evict-a1" {
				t.Errorf("A's leaf after the append is not evict-a1")
			}
			return nil
		})
	}()
	select {
	case err := <-answered:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute): // a deadlock detector, not a timing assertion
		t.Fatal("session A's sync waited for session B's eviction")
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if b.Indexed() || !a.Indexed() {
		t.Errorf("after the eviction: B loaded %v, A loaded %v; want B evicted, A kept", b.Indexed(), a.Indexed())
	}
	paths, err := x.IndexedPaths()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for p := range paths {
		got = append(got, filepath.Base(p))
	}
	sort.Strings(got)
	if !cmp.Equal(got, []string{"local-basic.jsonl"}) {
		t.Errorf("indexed = %v, want only local-basic.jsonl", got)
	}
}

// TestBudgetMeasuresOncePerInterval: the syncs of appended lines within
// budgetInterval are measured by one enforcement, not one each (each
// measure is a query, a directory listing and stats: a third of the CPU
// of an append and /context when run per sync). With the interval set to
// an hour, the goroutine's first run (at open, measuring earlier rows)
// and the run woken by the first sync are all there is after ten appended
// and synced lines; the usage reported then still counts every line.
func TestBudgetMeasuresOncePerInterval(t *testing.T) {
	old := budgetInterval
	budgetInterval = time.Hour
	t.Cleanup(func() { budgetInterval = old })
	root := t.TempDir()
	copyFixtures(t, root)
	ctx := context.Background()
	x := MustOpenIndex(t, root)
	// The goroutine's first pass (at start) is not one of the syncs':
	// counted from after it, else a start delayed by a loaded machine
	// counts it.
	for deadline := time.Now().Add(time.Minute); x.budget.runs.Load() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the budget goroutine's first pass never ran")
		}
		time.Sleep(time.Millisecond)
	}
	s := x.Session(filepath.Join(root, "local-basic.jsonl"))
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	before, err := x.Usage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	runs := x.budget.runs.Load()
	f, err := os.OpenFile(s.Path(), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	parent := "588752ae" // local-basic.jsonl's leaf
	for i := range 10 {
		id := "budget" + string(rune('a'+i))
		if _, err := f.WriteString(`{"type":"message","id":"` + id + `","parentId":"` + parent + `","timestamp":"2026-07-07T16:27:13.789Z","message":{"role":"user","content":"measured together","timestamp":1}}` + "\n"); err != nil {
			t.Fatal(err)
		}
		parent = id
		if err := s.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond) // the goroutine, woken by each sync before the fix, has run by now
	if n := x.budget.runs.Load(); n > runs {
		t.Errorf("%d enforcements during ten syncs within the interval, want none (the next comes after the interval)", n-runs)
	}
	after, err := x.Usage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after.UsedBytes <= before.UsedBytes {
		t.Errorf("used bytes %d after ten lines, want more than %d", after.UsedBytes, before.UsedBytes)
	}
}
