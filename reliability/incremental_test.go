package reliability

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	"contextd/e2e"
	"contextd/session"
	"contextd/store"
)

// snapshot is everything a store view exposes about one session, to
// compare two indexes of the same bytes. Stats.Lines is left out: it
// counts physical lines scanned, which differs with how the bytes arrived.
type snapshot struct {
	State    store.FileState
	Header   session.Header
	Entries  []session.Entry
	Items    []store.ItemMeta
	Texts    []string
	Stats    session.Stats
	Bytes    int64
	FileSize int64
}

func takeSnapshot(t testing.TB, s *store.Session) snapshot {
	t.Helper()
	var out snapshot
	err := s.Read(func(v *store.View) error {
		out.State, out.Bytes, out.FileSize = v.State, v.Bytes, v.FileSize
		out.Stats = v.Stats
		out.Stats.Lines = 0
		if v.Tree == nil {
			return nil
		}
		out.Header = v.Tree.Header
		out.Entries = v.Tree.Entries()
		out.Items = append([]store.ItemMeta(nil), v.Items...)
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
		t.Fatal(err)
	}
	return out
}

// openIndex opens a store index over root in dir.
func openIndex(t testing.TB, root, dir string, batch int64) *store.Index {
	t.Helper()
	x, err := store.OpenIndex(t.Context(), root, dir, store.Options{BatchBytes: batch})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

// crlfLine is a user message line that ends in "\r\n" and holds 2-, 3- and
// 4-byte UTF-8 sequences, appended to every fixture so that chunks can cut
// through both.
func crlfLine(parent string) []byte {
	return []byte(`{"type":"message","id":"crlf0001","parentId":"` + parent + `","timestamp":"2026-08-01T10:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":"CRLF line: Café 漢字 👩‍💻 end"}],"timestamp":1785578400000}}` + "\r\n")
}

// TestIncrementalEqualsColdEveryFixture checks docs/design.md §6 invariant 3 on
// every fixture (testdata/pi-sessions, testdata/pi-tree and the files Pi's
// SessionManager writes through e2e.GenSessions): the file is appended in
// random-sized chunks, with a sync after each, and chunks deliberately end
// inside a line, inside a multi-byte UTF-8 sequence and between "\r" and
// "\n". After every chunk the index covers exactly the complete lines
// (Bytes = offset after the last "\n"); at the end the full view (entries,
// items, item texts, stats) equals a cold index of the whole file, and
// again after the incremental index is reopened from disk.
func TestIncrementalEqualsColdEveryFixture(t *testing.T) {
	files := fixtureFiles(t)
	files = append(files, e2e.GenSessions(t, filepath.Join(t.TempDir(), "gen"))...)
	files = append(files, genExtra(t, e2e.Pi16, filepath.Join(t.TempDir(), "gen16"))...)
	rng := rand.New(rand.NewSource(20260801))
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasSuffix(src, []byte("\n")) {
				t.Fatalf("fixture does not end in a newline")
			}
			// The appended line continues the active branch.
			var p session.Parser
			tree, _, _, err := session.Feed(bytes.NewReader(src), &p, nil, 0, -1, session.DefaultMaxLineBytes, nil)
			if err != nil || tree == nil {
				t.Fatalf("cold parse: %v", err)
			}
			src = append(src, crlfLine(tree.Leaf())...)
			checkIncremental(t, src, cutPoints(t, src, rng), tree.Len()+1)
		})
	}
}

// genExtra runs gen-sessions.mjs with the Pi pv and returns the files only
// that Pi writes (pv.Extra: for 1.6, context edits, usage, system messages,
// 1.x compactions); the others are byte-identical to GenSessions' files.
func genExtra(t *testing.T, pv e2e.PiVersion, dir string) []string {
	t.Helper()
	var out []string
	for _, f := range e2e.GenSessionsOn(t, pv, dir) {
		if slices.Contains(pv.Extra, filepath.Base(f)) {
			out = append(out, f)
		}
	}
	if len(out) != len(pv.Extra) {
		t.Fatalf("gen-sessions with Pi %s wrote %d of its %d own files", pv.Name, len(out), len(pv.Extra))
	}
	return out
}

// cutPoints returns the chunk ends: forced ones (inside the first entry
// line, right before and right after the header's "\n", inside the first
// multi-byte sequence of the fixture, inside a 3-byte and a 4-byte
// sequence of the appended line, between its "\r" and "\n") plus a random
// walk of chunk sizes from 1 byte to 128 KiB, ending at len(src).
func cutPoints(t testing.TB, src []byte, rng *rand.Rand) []int {
	t.Helper()
	hdrEnd := bytes.IndexByte(src, '\n')
	line2End := hdrEnd + 1 + bytes.IndexByte(src[hdrEnd+1:], '\n')
	last := bytes.LastIndex(src[:len(src)-1], []byte("\n")) + 1 // start of the CRLF line
	forced := []int{
		hdrEnd,                      // header in flight
		hdrEnd + 1,                  // header complete, no entry yet
		(hdrEnd + 1 + line2End) / 2, // inside the first entry line
		last + bytes.Index(src[last:], []byte("漢")) + 1, // inside a 3-byte sequence
		last + bytes.Index(src[last:], []byte("👩")) + 2, // inside a 4-byte sequence
		last + bytes.Index(src[last:], []byte("é")) + 1, // inside a 2-byte sequence
		len(src) - 1, // between "\r" and "\n"
	}
	if src[len(src)-2] != '\r' {
		t.Fatalf("the appended line does not end in \\r\\n")
	}
	for i, b := range src[:last] {
		if b >= 0xC0 { // first multi-byte lead byte of the fixture itself
			forced = append(forced, i+1)
			break
		}
	}
	set := map[int]bool{len(src): true}
	for _, c := range forced {
		if c <= 0 || c >= len(src) {
			t.Fatalf("forced cut %d outside the file (%d bytes)", c, len(src))
		}
		set[c] = true
	}
	for off := 0; off < len(src); {
		n := 1 + rng.Intn(128<<10)
		if rng.Intn(8) == 0 {
			n = 1 + rng.Intn(7) // a few tiny pieces
		}
		off += n
		if off < len(src) {
			set[off] = true
		}
	}
	out := make([]int, 0, len(set))
	for c := range set {
		out = append(out, c)
	}
	sort.Ints(out)
	return out
}

// checkIncremental grows a file chunk by chunk (ending at cuts), syncing
// after each, and compares the result with a cold index of src.
func checkIncremental(t *testing.T, src []byte, cuts []int, wantEntries int) {
	ctx := t.Context()
	coldRoot := t.TempDir()
	writeFile(t, filepath.Join(coldRoot, "s.jsonl"), src)
	cold := openIndex(t, coldRoot, filepath.Join(t.TempDir(), "index"), 0)
	cs := cold.Session(filepath.Join(coldRoot, "s.jsonl"))
	if err := cs.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	want := takeSnapshot(t, cs)
	if len(want.Entries) != wantEntries || want.State != store.StateOK || want.Bytes != int64(len(src)) {
		t.Fatalf("cold index: %d entries, state %s, %d bytes; want %d entries, ok, %d bytes", len(want.Entries), want.State, want.Bytes, wantEntries, len(src))
	}

	root := t.TempDir()
	path := filepath.Join(root, "s.jsonl")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dir := filepath.Join(t.TempDir(), "index")
	// Small batches: a large chunk is ingested in several transactions.
	x := openIndex(t, root, dir, 64<<10)
	s := x.Session(path)
	hdrEnd := bytes.IndexByte(src, '\n')
	prev := 0
	for _, c := range cuts {
		if _, err := f.Write(src[prev:c]); err != nil {
			t.Fatal(err)
		}
		prev = c
		if err := s.Sync(ctx); err != nil {
			t.Fatalf("sync at %d: %v", c, err)
		}
		complete := int64(bytes.LastIndexByte(src[:c], '\n') + 1)
		err := s.Read(func(v *store.View) error {
			if v.Bytes != complete {
				return fmt.Errorf("after %d bytes: indexed %d, want %d (the complete lines only)", c, v.Bytes, complete)
			}
			switch {
			case c <= hdrEnd && v.State != store.StateEmpty:
				return fmt.Errorf("after %d bytes (header in flight): state %s, want empty", c, v.State)
			case c > hdrEnd && (v.State != store.StateOK || v.Tree == nil):
				return fmt.Errorf("after %d bytes: state %s, want ok", c, v.State)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	got := takeSnapshot(t, s)
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("incremental (%d chunks) != cold (-cold +incremental):\n%.4000s", len(cuts), d)
	}
	// A new process loads the same state from SQLite and the text file.
	x.Close()
	y := openIndex(t, root, dir, 0)
	ys := y.Session(path)
	if err := ys.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, takeSnapshot(t, ys)); d != "" {
		t.Fatalf("reopened incremental index != cold (-cold +reopened):\n%.4000s", d)
	}
}
