package coordinator

// A concurrent differential property test of the snapshots and caches:
// while one goroutine changes a session file (appends, a branch from an
// earlier entry as Pi's /tree then continue, a Local rollover (the
// boundary /windows plans, appended as Pi's new_context does), a note
// write the notes route plans, a rewrite in place, a truncation, an index
// rebuild), readers query every read route and the plans of the write
// routes (/windows, notes.write_file) of a Service with its caches and of
// one without, at once; after each change both answer as a fresh, cold
// index of the same bytes does. Run under -race, the readers and the
// change prove that no route reads what a sync writes.
//
// The three Services share one clock (diffNow) and one id source
// (diffID), so that their plans are comparable: every planned window and
// marker id is diffID, and the test renames it when it appends a plan.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"contextd"
	"contextd/history"
	"contextd/notes"
)

// diffNow and diffID are the clock and the id source of the Services of
// the differential test.
var diffNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

const diffID = "planned-id"

// diffTwins is cacheTwins with the differential test's clock and ids.
func diffTwins(t *testing.T, files map[string][]byte) (cached, plain *Service, dir string) {
	t.Helper()
	cached, dir = localService(t, files)
	cached.now, cached.newID = func() time.Time { return diffNow }, func() string { return diffID }
	plain = New(cached.Index, cached.State, contextd.ModeLocal, nil, nil, WithClock(cached.now), WithIDs(cached.newID))
	plain.memo = nil
	return cached, plain, dir
}

// routeAnswers is what every read route answers for one session.
type routeAnswers struct {
	Context  ContextAnswer
	AtLeaves []ContextAnswer // /context at each of the leaves asked
	BranchAt []BranchAnswer  // /branch at each of them
	Branch   BranchAnswer
	Windows  history.WindowsResult
	Items    history.ItemsResult
	Read     history.ReadResult
	Searches []history.ItemsResult
	Notes    notes.ListResult
	NoteRead notes.ReadResult
	NoteHits notes.SearchResult
	Hint     ThreadHintResult
	// The plans of the write routes: the next window's boundary and a
	// note write.
	Boundary WindowsAnswer
	NotePlan NoteWrite
	Errors   []string
}

// answersOf queries /context at each of leaves, in order, then every
// read route of svc for sid, then /context at leaves again; errors are
// part of the answer (their text).
func answersOf(ctx context.Context, svc *Service, sid string, leaves ...string) routeAnswers {
	var a routeAnswers
	note := func(route string, err error) {
		if err != nil {
			a.Errors = append(a.Errors, route+": "+err.Error())
		}
	}
	cc := CallContext{SessionID: sid}
	var err error
	for _, leaf := range leaves {
		c, err := svc.Context(ctx, sid, ContextRequest{LeafID: leaf})
		note("context at "+leaf, err)
		a.AtLeaves = append(a.AtLeaves, c)
	}
	a.Context, err = svc.Context(ctx, sid, ContextRequest{})
	note("context", err)
	a.Branch, err = svc.BranchOf(ctx, sid, "", 0)
	note("branch", err)
	a.Windows, err = svc.ListWindows(ctx, cc, history.ListWindowsArgs{})
	note("list_windows", err)
	a.Items, err = svc.ListItems(ctx, cc, history.ListItemsArgs{})
	note("list_items", err)
	if len(a.Items.Items) > 0 {
		it := a.Items.Items[0]
		a.Read, err = svc.ReadItem(ctx, cc, history.ReadItemArgs{ItemID: it.ItemID, WindowID: it.WindowID})
		note("read_item", err)
	}
	for _, q := range []string{"e", "the", "toolCall", "zzz-no-match"} {
		r, err := svc.SearchHistory(ctx, cc, history.SearchArgs{Query: q})
		note("search "+q, err)
		a.Searches = append(a.Searches, r)
	}
	a.Notes, err = svc.ListNoteFiles(ctx, cc, notes.ListFilesByPrefixArgs{})
	note("list_files", err)
	a.NoteRead, err = svc.ReadNoteFile(ctx, cc, notes.ReadFileArgs{Path: "rollover.md"})
	note("read_file", err)
	a.NoteHits, err = svc.SearchNotes(ctx, cc, notes.SearchArgs{Query: "round"})
	note("search_contents (notes)", err)
	a.Hint, err = svc.ThreadHint(ctx, cc)
	note("thread_hint", err)
	a.Boundary, err = svc.Windows(ctx, sid, WindowsRequest{})
	note("windows", err)
	// The same write each time: the plans a Service remembers (not yet
	// in the file) then change none of its answers.
	a.NotePlan, err = svc.WriteNote(ctx, cc, notes.WriteArgs{Path: "diff.md", Text: "the same text"})
	note("write_file", err)
	// Again, with /branch: what was cached since must not change them.
	for _, leaf := range leaves {
		c, err := svc.Context(ctx, sid, ContextRequest{LeafID: leaf})
		note("context again at "+leaf, err)
		a.AtLeaves = append(a.AtLeaves, c)
		b, err := svc.BranchOf(ctx, sid, leaf, 0)
		note("branch at "+leaf, err)
		a.BranchAt = append(a.BranchAt, b)
	}
	return a
}

// coldAnswers indexes a copy of file's bytes in a new index (registered
// with piVersion when not "") and answers every read route.
func coldAnswers(t *testing.T, file, sid, mode, piVersion string, leaves []string) routeAnswers {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cold, dir := localService(t, map[string][]byte{"s.jsonl": b})
	cold.now, cold.newID = func() time.Time { return diffNow }, func() string { return diffID }
	if piVersion != "" {
		if _, _, err := cold.Register(t.Context(), sid, RegisterRequest{SessionFile: filepath.Join(dir, "s.jsonl"), Mode: mode, PiVersion: piVersion}); err != nil {
			t.Fatal(err)
		}
	}
	return answersOf(t.Context(), cold, sid, leaves...)
}

// TestConcurrentAnswersMatchCold runs the differential test on a Local
// session (local-basic) and on a Tree session whose file holds archived
// windows (tree-basic: manifests and branch summaries, read through the
// archive cache), under both Pis' rules.
func TestConcurrentAnswersMatchCold(t *testing.T) {
	for _, c := range []struct{ fixture, mode string }{{"local-basic.jsonl", "local"}, {"tree-basic.jsonl", "tree"}} {
		for _, piVersion := range []string{"0.85.1", "1.6.0"} {
			t.Run(c.mode+" pi "+piVersion, func(t *testing.T) { concurrentAnswersMatchCold(t, c.fixture, c.mode, piVersion) })
		}
	}
}

func concurrentAnswersMatchCold(t *testing.T, fixture, mode, piVersion string) {
	data := readFixture(t, fixture)
	lines := strings.SplitAfter(strings.TrimRight(string(data), "\n"), "\n")
	lines[len(lines)-1] += "\n" // the last line, complete as in the file
	sid := entryID(t, lines[0])
	ctx := t.Context()
	cached, plain, dir := diffTwins(t, map[string][]byte{"s.jsonl": []byte(strings.Join(lines[:3], ""))})
	file := filepath.Join(dir, "s.jsonl")
	if _, _, err := cached.Register(ctx, sid, RegisterRequest{SessionFile: file, Mode: mode, PiVersion: piVersion}); err != nil {
		t.Fatal(err)
	}
	appendText := func(s string) {
		f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		if _, err := f.WriteString(s); err != nil {
			t.Error(err)
		}
	}
	next := 3 // the next fixture line to append
	var ids []string
	r := rand.New(rand.NewPCG(23, 1))
	appendSome := func() {
		for k := 0; k < 12 && next < len(lines); k++ {
			appendText(lines[next])
			ids = append(ids, entryID(t, lines[next]))
			next++
		}
	}
	branchFrom := func(parent string) {
		id := fmt.Sprintf("br%d", len(ids))
		appendText(`{` + hUser("on a branch") + `,"id":"` + id + `","parentId":"` + parent + `","timestamp":"2026-08-01T10:00:09.000Z"}` + "\n")
		ids = append(ids, id)
	}
	// appendPlanned appends a planned entry (custom or
	// custom_message) after the last entry of the file, as Pi's
	// appendEntry and sendMessage do, its planned ids renamed.
	appendPlanned := func(entry any) {
		b, err := json.Marshal(entry)
		if err != nil {
			t.Error(err)
			return
		}
		id := fmt.Sprintf("pl%d", len(ids))
		line := strings.ReplaceAll(string(b[:len(b)-1]), diffID, "w"+id) +
			`,"id":"` + id + `","parentId":"` + ids[len(ids)-1] + `","timestamp":"2026-08-01T10:00:09.000Z"}` + "\n"
		appendText(line)
		ids = append(ids, id)
	}
	cc := CallContext{SessionID: sid}
	rollovers := 0  // boundaries appended
	maxWindows := 0 // the most windows list_windows listed in a round
	// The changes, in turn; each is made while the readers run.
	changes := []struct {
		name string
		do   func()
	}{
		{"append", appendSome},
		{"branch beside the last entry", func() {
			// A second child of the last entry's parent: Pi's
			// /tree to the parent, then continue.
			if len(ids) >= 2 {
				branchFrom(ids[len(ids)-2])
			}
		}},
		{"append", appendSome},
		{"branch from an earlier entry", func() {
			if len(ids) >= 3 {
				branchFrom(ids[r.IntN(len(ids)-2)])
			}
		}},
		{"rollover (new_context)", func() {
			// Local new_context: the next window's boundary,
			// planned by /windows and appended by Pi. Refused
			// while the last batch has unanswered calls.
			w, err := cached.Windows(ctx, sid, WindowsRequest{})
			if err == nil && len(w.Append) == 1 && len(ids) > 0 {
				appendPlanned(w.Append[0])
				rollovers++
			}
		}},
		{"note write", func() {
			w, err := cached.WriteNote(ctx, cc, notes.WriteArgs{Path: "rollover.md", Text: fmt.Sprintf("round %d\n", next)})
			if err != nil {
				t.Error(err)
				return
			}
			if len(ids) > 0 {
				appendPlanned(w.Append[0])
			}
		}},
		{"rewrite in place", func() {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Error(err)
				return
			}
			// Same length, other bytes, in an indexed line: the file
			// changed in place and is indexed again whole.
			if i := strings.Index(string(b), "user"); i >= 0 {
				b[i] = 'U'
				defer func() { b[i] = 'u'; _ = os.WriteFile(file, b, 0o600) }()
				if err := os.WriteFile(file, b, 0o600); err != nil {
					t.Error(err)
				}
			}
		}},
		{"truncate", func() {
			keep := max(3, next*2/3)
			if err := os.WriteFile(file, []byte(strings.Join(lines[:keep], "")), 0o600); err != nil {
				t.Error(err)
			}
			next, ids = keep, ids[:0]
			for _, l := range lines[1:keep] {
				ids = append(ids, entryID(t, l))
			}
		}},
		{"rebuild", func() {
			if _, err := cached.Rebuild(ctx); err != nil {
				t.Error(err)
			}
		}},
	}
	for round := 0; round < 2*len(changes); round++ {
		ch := changes[round%len(changes)]
		if round >= len(changes) {
			ch = changes[0] // the second turn appends the rest
		}
		done := make(chan struct{})
		var wg sync.WaitGroup
		for k := 0; k < 4; k++ {
			wg.Add(1)
			go func(k int) {
				defer wg.Done()
				svc := cached
				if k%2 == 1 {
					svc = plain
				}
				for {
					answersOf(ctx, svc, sid) // errors are expected while the file changes
					select {
					case <-done:
						return
					default:
					}
				}
			}(k)
		}
		ch.do()
		close(done)
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		// /context at the last two entries, the last one last:
		// the memo then holds the parent's branch and the last
		// entry's extending it, which a branch beside the last
		// entry extends again.
		leaves := ids[max(0, len(ids)-2):]
		want := coldAnswers(t, file, sid, mode, piVersion, leaves)
		// /windows refuses the next boundary while the last
		// batch has unanswered calls (an answer like the others);
		// any other error of the cold index is the test's.
		maxWindows = max(maxWindows, len(want.Windows.Windows))
		if slices.ContainsFunc(want.Errors, func(e string) bool { return !strings.HasPrefix(e, "windows: ") }) {
			t.Fatalf("round %d (%s): the cold index answered errors: %v", round, ch.name, want.Errors)
		}
		for name, svc := range map[string]*Service{"cached": cached, "uncached": plain} {
			got := answersOf(ctx, svc, sid, leaves...)
			if d := cmp.Diff(want, got); d != "" {
				t.Fatalf("round %d (%s): %s Service vs a cold index of the same bytes (-cold +%s):\n%s", round, ch.name, name, name, d)
			}
		}
	}
	if rollovers == 0 {
		t.Errorf("/windows refused every rollover: no boundary was appended")
	}
	if maxWindows < 2 {
		t.Errorf("at most %d window listed in any round: the test read no window before the current one", maxWindows)
	}
}
