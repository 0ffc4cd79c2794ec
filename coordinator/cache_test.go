package coordinator

// The Service's memo (memo.go: branches extended from the parent's,
// /context's pairing list extended by the appended messages, modeHint's
// scan of the tree, search answers) gives the answers a Service without
// it gives, after appends, a rewrite of the file and a rebuild of the
// index.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"contextd"
	"contextd/history"
)

// cacheTwins returns a Service over files (name → content) with its caches
// and one over the same index without them.
func cacheTwins(t *testing.T, files map[string][]byte) (cached, plain *Service, dir string) {
	t.Helper()
	cached, dir = localService(t, files)
	plain = New(cached.Index, cached.State, contextd.ModeLocal, nil, nil)
	plain.memo = nil
	return cached, plain, dir
}

// sameAnswers asserts that cached and plain answer /context (default leaf
// and each of leaves), search_contents and list_items alike.
func sameAnswers(t *testing.T, step string, cached, plain *Service, sid string, leaves ...string) {
	t.Helper()
	ctx := t.Context()
	for _, leaf := range append([]string{""}, leaves...) {
		a, errA := cached.Context(ctx, sid, ContextRequest{LeafID: leaf})
		b, errB := plain.Context(ctx, sid, ContextRequest{LeafID: leaf})
		if (errA == nil) != (errB == nil) {
			t.Fatalf("%s, leaf %q: /context errors differ: cached %v, uncached %v", step, leaf, errA, errB)
		}
		if d := cmp.Diff(b, a); d != "" {
			t.Fatalf("%s, leaf %q: /context cached vs uncached (-uncached +cached):\n%s", step, leaf, d)
		}
		if errA == nil {
			sameNoteState(t, step, cached, sid, leaf)
		}
	}
	cc := CallContext{SessionID: sid}
	for _, q := range []string{"e", "the", "toolCall", "zzz-no-match"} {
		a, errA := cached.SearchHistory(ctx, cc, history.SearchArgs{Query: q})
		b, errB := plain.SearchHistory(ctx, cc, history.SearchArgs{Query: q})
		if (errA == nil) != (errB == nil) {
			t.Fatalf("%s: search %q errors differ: cached %v, uncached %v", step, q, errA, errB)
		}
		if d := cmp.Diff(b, a); d != "" {
			t.Fatalf("%s: search %q cached vs uncached (-uncached +cached):\n%s", step, q, d)
		}
		// Again, from the cache, and with another limit (another answer).
		again, err := cached.SearchHistory(ctx, cc, history.SearchArgs{Query: q})
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(b, again); d != "" {
			t.Fatalf("%s: search %q from the cache vs uncached (-uncached +cached):\n%s", step, q, d)
		}
		one := 1
		a, errA = cached.SearchHistory(ctx, cc, history.SearchArgs{Query: q, Limit: &one})
		b, errB = plain.SearchHistory(ctx, cc, history.SearchArgs{Query: q, Limit: &one})
		if errA != nil || errB != nil {
			t.Fatal(errA, errB)
		}
		if d := cmp.Diff(b, a); d != "" {
			t.Fatalf("%s: search %q limit 1 cached vs uncached (-uncached +cached):\n%s", step, q, d)
		}
	}
}

// sameNoteState asserts that the memo's note state of leaf (extended from
// an earlier leaf's when there is one: cachedNoteState) is the replay of
// the branch's note entries (noteState): files, skipped events and
// snapshot size.
func sameNoteState(t *testing.T, step string, cached *Service, sid, leaf string) {
	t.Helper()
	tgt, err := cached.Resolve(t.Context(), sid)
	if err != nil {
		t.Fatal(err)
	}
	if err := cached.withCachedBranch(tgt, leaf, func(b *Branch) error {
		got, err := cached.cachedNoteState(b)
		if err != nil {
			return err
		}
		want, err := noteState(b)
		if err != nil {
			return err
		}
		if d := cmp.Diff(want.Files(), got.Files()); d != "" {
			t.Fatalf("%s, leaf %q: note files cached vs replayed (-replayed +cached):\n%s", step, leaf, d)
		}
		if d := cmp.Diff(want.Skipped, got.Skipped); d != "" || want.SnapshotBytes() != got.SnapshotBytes() {
			t.Fatalf("%s, leaf %q: skipped note events or snapshot bytes (%d cached, %d replayed) differ:\n%s", step, leaf, got.SnapshotBytes(), want.SnapshotBytes(), d)
		}
		return nil
	}); err != nil {
		t.Fatalf("%s, leaf %q: note state: %v", step, leaf, err)
	}
}

// TestCachedAnswersMatchUncached appends the lines of Pi-written fixtures
// (Local and Tree mode) one at a time, then hand-written entries that the
// extended caches must not extend over (a context edit, a compaction, a
// new boundary), then rewrites the file shorter, then rebuilds the index;
// after each step the cached Service answers as the uncached one.
func TestCachedAnswersMatchUncached(t *testing.T) {
	for _, fx := range []struct{ name, sid string }{
		{"local-basic.jsonl", lbSession},
		{"tree-basic.jsonl", ""},
		{"tree-manual-summary.jsonl", ""},
	} {
		t.Run(fx.name, func(t *testing.T) {
			data := readFixture(t, fx.name)
			lines := strings.SplitAfter(strings.TrimRight(string(data), "\n"), "\n")
			sid := fx.sid
			if sid == "" {
				sid = headerID(t, lines[0])
			}
			cached, plain, dir := cacheTwins(t, map[string][]byte{"s.jsonl": []byte(strings.Join(lines[:3], ""))})
			file := filepath.Join(dir, "s.jsonl")
			appendText := func(s string) {
				t.Helper()
				f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if _, err := f.WriteString(s); err != nil {
					t.Fatal(err)
				}
			}
			var ids []string
			for i := 3; i < len(lines); i++ {
				appendText(lines[i])
				if !strings.HasSuffix(lines[i], "\n") {
					appendText("\n")
				}
				ids = append(ids, entryID(t, lines[i]))
				// /context at the new leaf (extended from the previous
				// leaf's cache), and at an earlier entry now and then.
				leaves := []string{}
				if i%7 == 0 {
					leaves = append(leaves, ids[len(ids)/2])
				}
				sameAnswers(t, "append line "+itoa(i+1), cached, plain, sid, leaves...)
			}
			last := ids[len(ids)-1]
			for i, body := range []string{
				hUser("after the fixture"),
				`"type":"context_edit","targetId":"` + last + `","replacement":{"content":"edited"}`,
				hUser("after the edit"),
				`"type":"compaction","summary":"s","firstKeptEntryId":"` + last + `","tokensBefore":1`,
				hUser("after the compaction"),
				hBoundary(9, "w9", "w9", ""),
				hAssistant(hCall("c1", "read")),
				hResult("c1", "read", "result one"),
				hResult("c1", "read", "a second result"), // duplicate_tool_result
				hUser("between"),
				hResult("c0", "read", "no call"), // orphaned_tool_result
				hAssistant(hCall("c2", "read")),
				hBoundary(10, "w9", "w10", "w9"), // boundary_inside_tool_call
				hResult("c2", "read", "result two"),
				hResult("c3", "read", "no call either"),
			} {
				id := "x" + itoa(i)
				appendText(`{` + body + `,"id":"` + id + `","parentId":"` + last + `","timestamp":"2026-08-01T10:00:09.000Z"}` + "\n")
				last = id
				sameAnswers(t, "hand entry "+id, cached, plain, sid, ids[len(ids)-1])
			}

			// A rewrite: the file replaced by a shorter one.
			short := strings.Join(lines[:len(lines)*2/3], "")
			if err := os.WriteFile(file+".tmp", []byte(short), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(file+".tmp", file); err != nil {
				t.Fatal(err)
			}
			sameAnswers(t, "rewrite", cached, plain, sid)
			appendText(strings.Join(lines[len(lines)*2/3:], ""))
			sameAnswers(t, "append after rewrite", cached, plain, sid, ids[len(ids)/3])

			// A rebuild of the index.
			before, err := cached.Context(t.Context(), sid, ContextRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cached.Rebuild(t.Context()); err != nil {
				t.Fatal(err)
			}
			sameAnswers(t, "rebuild", cached, plain, sid, ids[len(ids)/3])
			after, err := cached.Context(t.Context(), sid, ContextRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(before, after); d != "" {
				t.Fatalf("/context before vs after rebuild:\n%s", d)
			}
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// headerID and entryID read the "id" of a JSONL line.
func headerID(t *testing.T, line string) string { return entryID(t, line) }

func entryID(t *testing.T, line string) string {
	t.Helper()
	var e struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(line), &e); err != nil || e.ID == "" {
		t.Fatalf("line without an id: %.80s (%v)", line, err)
	}
	return e.ID
}
