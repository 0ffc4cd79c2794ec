package store

import (
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"contextd/history"
	"contextd/session"
)

// MustOpenIndex opens an index on a temp dir over root.
func MustOpenIndex(tb testing.TB, root string) *Index {
	tb.Helper()
	x, err := OpenIndex(context.Background(), root, filepath.Join(tb.TempDir(), "index"), Options{BatchBytes: 256 << 10})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { x.Close() })
	return x
}

func copyFile(tb testing.TB, src, dst string) {
	tb.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		tb.Fatal(err)
	}
}

// copyFixtures copies the Pi session fixtures (testdata/pi-sessions and
// testdata/pi-tree, at least 5 files) into root and returns their base
// names and the SHA-256 of each, to prove later that no file changed.
func copyFixtures(t *testing.T, root string) ([]string, map[string][32]byte) {
	t.Helper()
	var names []string
	for _, dir := range []string{"pi-sessions", "pi-tree"} {
		m, _ := filepath.Glob(filepath.Join("..", "testdata", dir, "*.jsonl"))
		for _, p := range m {
			copyFile(t, p, filepath.Join(root, filepath.Base(p)))
			names = append(names, filepath.Base(p))
		}
	}
	if len(names) < 5 {
		t.Fatalf("only %d fixture files", len(names))
	}
	hashes := map[string][32]byte{}
	for _, n := range names {
		b, _ := os.ReadFile(filepath.Join(root, n))
		hashes[n] = sha256.Sum256(b)
	}
	return names, hashes
}

// snapshot captures everything a view exposes, to compare two indexes.
type snapshot struct {
	Header  session.Header
	Entries []session.Entry
	Items   []ItemMeta
	Texts   []string
	Stats   session.Stats
	Bytes   int64
}

func snap(tb testing.TB, s *Session) snapshot {
	tb.Helper()
	var out snapshot
	err := s.Read(func(v *View) error {
		if v.Tree == nil {
			return nil
		}
		out.Header = v.Tree.Header
		out.Entries = v.Tree.Entries()
		out.Items = append([]ItemMeta(nil), v.Items...)
		out.Stats = v.Stats
		out.Bytes = v.Bytes
		for i := range v.Items {
			if ref, ok := v.Ref(i, "w"); ok {
				txt, err := v.Texts().Slice(ref, 0, -1)
				if err != nil {
					return err
				}
				out.Texts = append(out.Texts, txt)
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

func TestIngestFixturesAndRebuild(t *testing.T) {
	root := t.TempDir()
	names, hashes := copyFixtures(t, root)
	ctx := context.Background()
	x := MustOpenIndex(t, root)
	ss, err := x.SyncAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != len(names) {
		t.Fatalf("sessions = %d, want %d", len(ss), len(names))
	}
	before := map[string]snapshot{}
	for _, s := range ss {
		before[s.Path()] = snap(t, s)
	}
	// The two files with concatenated objects report one skipped line each
	// (SOURCES.md: compact.jsonl line 1013, pi-mono-session.jsonl line 440).
	for _, c := range []struct {
		name string
		line int
	}{{"compact.jsonl", 1013}, {"pi-mono-session.jsonl", 440}} {
		st := before[filepath.Join(root, c.name)].Stats
		if st.Skipped[session.SkipInvalidJSON] != 1 || len(st.Problems) != 1 || st.Problems[0].Line != c.line {
			t.Errorf("%s: stats = %+v, want one invalid_json line %d", c.name, st, c.line)
		}
	}
	if err := x.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	for _, s := range x.Sessions() {
		if d := cmp.Diff(before[s.Path()], snap(t, s)); d != "" {
			t.Errorf("%s after rebuild (-before +after):\n%s", s.Path(), d)
		}
	}
	// A fresh process (new Index on the same dir) loads the same state from SQLite.
	dir := x.dir
	x.Close()
	y, err := OpenIndex(ctx, root, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer y.Close()
	for _, n := range names {
		s := y.Session(filepath.Join(root, n))
		if err := s.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(before[s.Path()], snap(t, s)); d != "" {
			t.Errorf("%s after reopen (-before +after):\n%s", n, d)
		}
	}
	for _, n := range names {
		b, _ := os.ReadFile(filepath.Join(root, n))
		if sha256.Sum256(b) != hashes[n] {
			t.Errorf("%s was modified", n)
		}
	}
}

// TestIncrementalEqualsCold appends a file in random-sized pieces (cutting
// lines, UTF-8 sequences and \r\n pairs) and syncs after each piece.
func TestIncrementalEqualsCold(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "testdata", "pi-tree", "tree-multi.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// Add a CRLF line and a multi-byte line to cut through.
	src = append(src, []byte("{\"type\":\"custom\",\"customType\":\"x\",\"data\":{\"s\":\"漢字👩‍💻\"},\"id\":\"crlf0001\",\"parentId\":\"1d4fdaee\",\"timestamp\":\"t\"}\r\n")...)
	ctx := context.Background()
	coldRoot := t.TempDir()
	os.WriteFile(filepath.Join(coldRoot, "s.jsonl"), src, 0o600)
	cold := MustOpenIndex(t, coldRoot)
	cs := cold.Session(filepath.Join(coldRoot, "s.jsonl"))
	if err := cs.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	want := snap(t, cs)

	rng := rand.New(rand.NewSource(42))
	for round := 0; round < 3; round++ {
		if round == 2 {
			// Tiny pieces over the first 40 KiB only: every sync costs a stat and a read.
			src = src[:40<<10]
			os.WriteFile(filepath.Join(coldRoot, "s.jsonl"), src, 0o600)
			cold2 := MustOpenIndex(t, coldRoot)
			cs2 := cold2.Session(filepath.Join(coldRoot, "s.jsonl"))
			if err := cs2.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			want = snap(t, cs2)
		}
		root := t.TempDir()
		path := filepath.Join(root, "s.jsonl")
		f, _ := os.Create(path)
		x := MustOpenIndex(t, root)
		s := x.Session(path)
		for off := 0; off < len(src); {
			n := 1 + rng.Intn(4096)
			if round == 2 {
				n = 1 + rng.Intn(7) // tiny pieces
			}
			if off+n > len(src) {
				n = len(src) - off
			}
			f.Write(src[off : off+n])
			off += n
			if err := s.Sync(ctx); err != nil {
				t.Fatal(err)
			}
		}
		f.Close()
		got := snap(t, s)
		got.Stats.Lines, want.Stats.Lines = 0, 0
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("round %d incremental != cold (-cold +incremental):\n%s", round, d)
		}
	}
}

func TestRewriteAndStates(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	path := filepath.Join(root, "v1.jsonl")
	copyFile(t, filepath.Join("..", "testdata", "pi-sessions", "pi-mono-session.jsonl"), path)
	x := MustOpenIndex(t, root)
	s := x.Session(path)
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	v1 := snap(t, s)
	if v1.Header.Version != 1 {
		t.Fatalf("version = %d", v1.Header.Version)
	}
	// Pi migrates in place: the file is rewritten as v3 (same length or not).
	copyFile(t, filepath.Join("..", "testdata", "pi-tree", "tree-basic.jsonl"), path)
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	got := snap(t, s)
	if got.Header.Version != 3 || len(got.Entries) != 62 {
		t.Errorf("after rewrite: version %d entries %d, want 3 and 62", got.Header.Version, len(got.Entries))
	}
	// Truncated: shrinks below the indexed size.
	b, _ := os.ReadFile(path)
	os.WriteFile(path, b[:1000], 0o600)
	s.Sync(ctx)
	got = snap(t, s)
	if got.Bytes > 1000 {
		t.Errorf("bytes = %d after truncation", got.Bytes)
	}
	// Deleted.
	os.Remove(path)
	s.Sync(ctx)
	s.Read(func(v *View) error {
		if v.State != StateMissing {
			t.Errorf("state = %s, want missing", v.State)
		}
		return nil
	})
	// A symlink pointing outside.
	outside := filepath.Join(t.TempDir(), "x.jsonl")
	copyFile(t, filepath.Join("..", "testdata", "pi-tree", "tree-basic.jsonl"), outside)
	os.Symlink(outside, path)
	s.Sync(ctx)
	s.Read(func(v *View) error {
		if v.State != StateOutside {
			t.Errorf("state = %s, want outside", v.State)
		}
		return nil
	})
	if _, err := x.Resolve(path); !errors.Is(err, ErrOutside) {
		t.Errorf("Resolve = %v, want ErrOutside", err)
	}
	// Empty and not-a-session files.
	empty := filepath.Join(root, "empty.jsonl")
	os.WriteFile(empty, nil, 0o600)
	se := x.Session(empty)
	se.Sync(ctx)
	se.Read(func(v *View) error {
		if v.State != StateEmpty {
			t.Errorf("empty: state = %s", v.State)
		}
		return nil
	})
	bad := filepath.Join(root, "bad.jsonl")
	os.WriteFile(bad, []byte("{\"type\":\"message\",\"id\":\"a\"}\n"), 0o600)
	sb := x.Session(bad)
	sb.Sync(ctx)
	sb.Read(func(v *View) error {
		if v.State != StateNotPi {
			t.Errorf("bad: state = %s", v.State)
		}
		return nil
	})
}

func TestSearchScan(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	path := filepath.Join(root, "s.jsonl")
	copyFile(t, filepath.Join("..", "testdata", "pi-tree", "local-basic.jsonl"), path)
	x := MustOpenIndex(t, root)
	s := x.Session(path)
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	s.Read(func(v *View) error {
		var refs []history.ItemRef
		for i := range v.Items {
			if r, ok := v.Ref(i, "w"); ok {
				refs = append(refs, r)
			}
		}
		// Oracle: plain strings.Contains over every item text.
		for _, q := range []string{"useWidgetFilters", "npx vitest run", "e", "no such text anywhere", "}\n{"} {
			var want, got []string
			for _, r := range refs {
				txt, _ := v.Texts().Slice(r, 0, -1)
				if contains(txt, q) {
					want = append(want, r.ItemID)
				}
			}
			v.Texts().Search(q, history.RefList(refs), 0, func(r history.ItemRef) bool { got = append(got, r.ItemID); return true })
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("search %q (-want +got):\n%s", q, d)
			}
		}
		return nil
	})
	_ = io.EOF
	_ = time.Now
}

func contains(s, q string) bool {
	for i := 0; i+len(q) <= len(s); i++ {
		if s[i:i+len(q)] == q {
			return true
		}
	}
	return false
}

// refsHolding returns the refs of v's items (agent "w") and how many of
// their texts hold q, by strings.Contains (the oracle); at least one must.
func refsHolding(t *testing.T, v *View, q string) ([]history.ItemRef, int) {
	t.Helper()
	var refs []history.ItemRef
	want := 0
	for i := range v.Items {
		if r, ok := v.Ref(i, "w"); ok {
			refs = append(refs, r)
			if txt, _ := v.Texts().Slice(r, 0, -1); contains(txt, q) {
				want++
			}
		}
	}
	if want == 0 {
		t.Fatalf("no item holds %q: the test proves nothing", q)
	}
	return refs, want
}

// searchCount is how many of refs v's Search finds holding q (-1 on an
// error).
func searchCount(v *View, q string, refs []history.ItemRef) int {
	n := 0
	if err := v.Texts().Search(q, history.RefList(refs), 0, func(history.ItemRef) bool { n++; return true }); err != nil {
		return -1
	}
	return n
}

// A search that reads item text without frame filters (a 1-byte query)
// holds a scanCores token, of which there are GOMAXPROCS-1 (at least
// one), for each piece it reads, or for all of a ReadScan of an
// UnfilteredQuery: with every token taken it waits, and it finds what
// strings.Contains finds once one is given back.
func TestUnfilteredScanTakesACore(t *testing.T) {
	ctx := context.Background()
	s := syncedLocalBasic(t)
	if n, want := cap(scanCores), max(1, runtime.GOMAXPROCS(0)-1); n != want {
		t.Fatalf("%d scan cores, want max(1, GOMAXPROCS-1) = %d", n, want)
	}
	var refs []history.ItemRef
	want := 0
	s.Read(func(v *View) error { refs, want = refsHolding(t, v, "q"); return nil })
	search := func(v *View) int { return searchCount(v, "q", refs) }
	for _, whole := range []bool{false, true} {
		// whole: ReadScan of an UnfilteredQuery holds a token for all
		// of its callback, and Search then takes none (with one token,
		// a second would never come); otherwise Search takes one per
		// piece.
		for range cap(scanCores) {
			scanCores <- struct{}{}
		}
		found := make(chan int, 1)
		go func() {
			if whole {
				s.ReadScan(ctx, UnfilteredQuery("q"), func(v *View) error { found <- search(v); return nil })
			} else {
				s.Read(func(v *View) error { found <- search(v); return nil })
			}
		}()
		select {
		case n := <-found:
			t.Fatalf("whole %v: a search without frame filters ran with every scan core taken (%d items)", whole, n)
		case <-time.After(200 * time.Millisecond):
		}
		<-scanCores
		if n := <-found; n != want {
			t.Fatalf("whole %v: the search found %d items once a core was free, want %d", whole, n, want)
		}
		for range cap(scanCores) - 1 {
			<-scanCores
		}
	}
	if UnfilteredQuery("abc") || !UnfilteredQuery("ab") {
		t.Errorf("UnfilteredQuery: abc %v, ab %v; want false, true (the shortest n-gram of the filters is %d bytes)", UnfilteredQuery("abc"), UnfilteredQuery("ab"), shortGram)
	}
}

// A search of another session's view (a Tree copy's parent, read with
// Read for the same request) inside a ReadScan callback runs under the
// callback's slot and core once the view shares them (View.ShareScan);
// without that it waits for a second core that only its own request could
// give back.
func TestShareScanOfAParentView(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	parentPath, copyPath := filepath.Join(root, "parent.jsonl"), filepath.Join(root, "copy.jsonl")
	copyFile(t, filepath.Join("..", "testdata", "pi-tree", "local-basic.jsonl"), parentPath)
	copyFile(t, filepath.Join("..", "testdata", "pi-tree", "local-basic.jsonl"), copyPath)
	x := MustOpenIndex(t, root)
	parent, cp := x.Session(parentPath), x.Session(copyPath)
	for _, s := range []*Session{parent, cp} {
		if err := s.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// The parent's view, held as the coordinator's holdLineage holds it.
	got, done := make(chan *View), make(chan struct{})
	go parent.Read(func(v *View) error { got <- v; <-done; return nil })
	pv := <-got
	defer close(done)
	refs, want := refsHolding(t, pv, "q")
	search := func() int { return searchCount(pv, "q", refs) }
	// Every other slot and core is taken: the ReadScan below holds the
	// last of each.
	for range cap(scanSlots) - 1 {
		scanSlots <- struct{}{}
	}
	for range cap(scanCores) - 1 {
		scanCores <- struct{}{}
	}
	defer func() {
		for range cap(scanSlots) - 1 {
			<-scanSlots
		}
		for range cap(scanCores) - 1 {
			<-scanCores
		}
	}()
	for _, share := range []bool{true, false} {
		found := make(chan int, 1)
		go cp.ReadScan(ctx, UnfilteredQuery("q"), func(v *View) error {
			if share {
				defer pv.ShareScan(v)()
			}
			found <- search()
			return nil
		})
		wait := 300 * time.Millisecond // to show that it waits
		if share {
			wait = 10 * time.Second // to fail rather than hang
		}
		select {
		case n := <-found:
			if !share {
				t.Fatalf("without sharing, the parent's search ran (%d items) with no core free", n)
			}
			if n != want {
				t.Fatalf("shared: the parent's search found %d items, want %d", n, want)
			}
		case <-time.After(wait):
			if share {
				t.Fatal("shared: the parent's search did not run within 10 s")
			}
			// Without sharing it waits for a second slot or core: free
			// one of each (taking the ReadScan's back from the channels;
			// they are returned below) so that it ends.
			<-scanCores
			<-scanSlots
			if n := <-found; n != want {
				t.Fatalf("unshared, once a core was free: %d items, want %d", n, want)
			}
			scanSlots <- struct{}{}
			scanCores <- struct{}{}
		}
	}
}

// At most cap(scanSlots) searches scan at once: with every slot taken, a
// search waits, and it runs once a slot is given back.
func TestSearchWaitsForAScanSlot(t *testing.T) {
	s := syncedLocalBasic(t)
	if n := cap(scanSlots); n != max(2, runtime.GOMAXPROCS(0)) {
		t.Fatalf("%d scan slots, want max(2, GOMAXPROCS) = %d", n, max(2, runtime.GOMAXPROCS(0)))
	}
	for range cap(scanSlots) {
		scanSlots <- struct{}{}
	}
	found := make(chan int, 1)
	go s.Read(func(v *View) error {
		var refs []history.ItemRef
		for i := range v.Items {
			if r, ok := v.Ref(i, "w"); ok {
				refs = append(refs, r)
			}
		}
		n := 0
		err := v.Texts().Search("npx vitest run", history.RefList(refs), 0, func(history.ItemRef) bool { n++; return true })
		if err != nil {
			n = -1
		}
		found <- n
		return nil
	})
	select {
	case n := <-found:
		t.Fatalf("a search ran with every scan slot taken (%d items)", n)
	case <-time.After(200 * time.Millisecond):
	}
	<-scanSlots
	// 15 items of local-basic.jsonl hold "npx vitest run" (TestSearchScan
	// checks the same search against strings.Contains).
	if n := <-found; n != 15 {
		t.Fatalf("the search found %d items once a slot was free, want 15", n)
	}
	for range cap(scanSlots) - 1 {
		<-scanSlots
	}
}

// A search that holds a scan core for all of its work (ReadScan of an
// UnfilteredQuery) finishes with no other token free, on a machine of
// three cores or more too (two tokens or more), where a large search
// splits into two goroutines: it must not split, or its second goroutine
// waits for a token that only searches like it hold. Four concurrent
// 1-byte searches hung that way.
func TestUnfilteredScanOnManyCores(t *testing.T) {
	ctx := context.Background()
	s := syncedLocalBasic(t)
	// Three cores (two tokens), and every search large enough to split.
	defer func(c chan struct{}, split int64) { scanCores, searchSplit = c, split }(scanCores, searchSplit)
	scanCores, searchSplit = make(chan struct{}, 2), 1
	var refs []history.ItemRef
	want := 0
	s.Read(func(v *View) error { refs, want = refsHolding(t, v, "q"); return nil })
	if want == 0 {
		t.Fatal("no item holds q: the search would check nothing")
	}
	scanCores <- struct{}{} // the other token is another search's
	found, returned := make(chan int, 1), make(chan struct{})
	go func() {
		defer close(returned)
		s.ReadScan(ctx, UnfilteredQuery("q"), func(v *View) error { found <- searchCount(v, "q", refs); return nil })
	}()
	select {
	case n := <-found:
		if n != want {
			t.Fatalf("the search found %d items, want %d", n, want)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a search holding a scan core waited for a second one (it split into two goroutines)")
	}
	// ReadScan gives its token back after its callback: the deferred
	// restore of scanCores must come after that, or the token would be
	// taken from the restored channel (a token of someone else's).
	<-returned
	<-scanCores
}

// syncedLocalBasic copies the local-basic fixture into a fresh sessions
// directory and returns its session, synced.
func syncedLocalBasic(t *testing.T) *Session {
	t.Helper()
	root := t.TempDir()
	path := filepath.Join(root, "s.jsonl")
	copyFile(t, filepath.Join("..", "testdata", "pi-tree", "local-basic.jsonl"), path)
	s := MustOpenIndex(t, root).Session(path)
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestForgetStopsFilterBuilds: a filter build that runs after the session
// was forgotten (queued before Index.Forget) writes nothing and logs
// nothing. Forget moves the session to its next generation and publishes
// its text as it was: the build read the old text's frames under the next
// generation's names (gone: a warning logged) and created that
// generation's .blk, a file no session owns.
func TestForgetStopsFilterBuilds(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "s.jsonl")
	genSession(t, path, 0.8) // under rawIngestBytes: frames compressed inline
	x, logs, s := loggedSynced(t, root, path)
	x.filtersIdle()
	if framesFilterable(s.textSize) < 10 {
		t.Fatalf("%d complete frames, want at least 10", framesFilterable(s.textSize))
	}
	// The filters not built yet, as when the build is still queued.
	if err := s.resetFilters(0); err != nil {
		t.Fatal(err)
	}
	if err := x.Forget(t.Context(), path); err != nil {
		t.Fatal(err)
	}
	if err := s.buildFrameFilters(); err != nil {
		t.Fatalf("filter build after Forget: %v", err)
	}
	if err := s.compressFrames(); err != nil {
		t.Fatalf("compression after Forget: %v", err)
	}
	s.kickFilters()
	x.filtersIdle()
	if got := onDisk(t, x); len(got) != 0 {
		t.Fatalf("texts/ after Forget and a filter build: %v, want nothing", got)
	}
	noWarn(t, logs)
}
