package coordinator

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"contextd"
)

// loopEntries is a session whose window w0 made progress, followed by
// windows w1…wN each holding only a new_context call and its result (a
// rollover loop of N closed windows when the last boundary, w(N+1), is
// open).
func loopEntries(n int) []string {
	nc := func(id string) []string {
		return []string{hAssistant(hCall(id, "new_context")), hResult(id, "new_context", "A new context window will start without summarizing conversation history.")}
	}
	es := []string{hBoundary(0, "w0", "w0", ""), hUser("start"), hAssistant(hCall("r0", "read")), hResult("r0", "read", "a")}
	es = append(es, nc("n0")...)
	for i := 1; i <= n+1; i++ {
		es = append(es, hBoundary(i, "w0", fmt.Sprintf("w%d", i), fmt.Sprintf("w%d", i-1)))
		if i <= n {
			es = append(es, nc(fmt.Sprintf("n%d", i))...)
		}
	}
	return es
}

// ws returns "w<from>" down to "w<to>".
func ws(from, to int) []string {
	var out []string
	for i := from; i >= to; i-- {
		out = append(out, fmt.Sprintf("w%d", i))
	}
	return out
}

// TestRolloverLoopPages: a loop of 40 closed windows (w1…w40, most
// recent first) is listed whole through the cursor (docs/security.md
// N10): GET /v1/sessions/{id} names w40…w16 and a cursor; pages of 10
// then give w15…w6 and w5…w1, the last without a cursor. The cursor
// stays valid while the loop grows (two more windows: the next page is
// still w5…w1, windows 42); a cursor that is not one contextd issued, or
// of another session, is EBadRequest; one of a loop that progress has
// ended is EConflict; limit 0 means 25, 101 is EInvalid. At a03e7ac the
// session state listed every window (100,000 windows: 3.9 MB); before the
// cursor the ids past the 25th could not be had at all.
func TestRolloverLoopPages(t *testing.T) {
	ctx := t.Context()
	const id = "sess-loop-pages"
	es := loopEntries(40)
	svc, dir := localService(t, map[string][]byte{"s.jsonl": handLines(id, es...), "o.jsonl": handLines("sess-other", loopEntries(30)...)})
	st, err := svc.SessionStateOf(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	loop := st.RolloverLoop
	if loop == nil || loop.Windows != 40 || loop.NextCursor == "" || !cmp.Equal(loop.WindowIDs, ws(40, 16)) {
		t.Fatalf("rollover_loop %+v, want windows 40, w40…w16 and a next_cursor", loop)
	}
	first, err := svc.RolloverLoopPageOf(ctx, id, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if first.Windows != 40 || first.NextCursor != loop.NextCursor || !cmp.Equal(first.WindowIDs, ws(40, 16)) {
		t.Errorf("first page %+v, want the session state's (limit 0 = 25)", first)
	}
	p2, err := svc.RolloverLoopPageOf(ctx, id, loop.NextCursor, 10)
	if err != nil {
		t.Fatal(err)
	}
	if p2.Windows != 40 || p2.NextCursor == "" || !cmp.Equal(p2.WindowIDs, ws(15, 6)) {
		t.Fatalf("page 2 %+v, want w15…w6 and a cursor", p2)
	}

	// The loop grows by two windows: the cursor still names w5 on.
	grown := loopEntries(42)
	if err := os.WriteFile(filepath.Join(dir, "s.jsonl"), handLines(id, grown...), 0o600); err != nil {
		t.Fatal(err)
	}
	p3, err := svc.RolloverLoopPageOf(ctx, id, p2.NextCursor, 10)
	if err != nil {
		t.Fatal(err)
	}
	if want := (RolloverLoopPage{Windows: 42, WindowIDs: ws(5, 1)}); !cmp.Equal(p3, want) {
		t.Errorf("last page after the loop grew (-want +got):\n%s", cmp.Diff(want, p3))
	}

	code := func(err error) contextd.Code {
		if err == nil {
			return ""
		}
		return contextd.ErrorCode(err)
	}
	other, err := svc.RolloverLoopPageOf(ctx, "sess-other", "", 25)
	if err != nil || other.NextCursor == "" {
		t.Fatalf("other session's first page: %+v %v", other, err)
	}
	for _, c := range []struct {
		name, cursor string
		limit        int
		want         contextd.Code
	}{
		{"not base64", "not a cursor!", 10, contextd.EBadRequest},
		{"base64 of nothing contextd wrote", "AAAA", 10, contextd.EBadRequest},
		{"another session's cursor", other.NextCursor, 10, contextd.EBadRequest},
		{"a cursor cut short", p2.NextCursor[:len(p2.NextCursor)-2], 10, contextd.EBadRequest},
		{"limit over 100", "", 101, contextd.EInvalid},
	} {
		if _, err := svc.RolloverLoopPageOf(ctx, id, c.cursor, c.limit); code(err) != c.want {
			t.Errorf("%s: %v, want code %s", c.name, err, c.want)
		}
	}

	// Progress in a new window ends the loop: the cursor is stale.
	ended := append(grown, hUser("back to work"), hBoundary(44, "w0", "w44", "w43"))
	if err := os.WriteFile(filepath.Join(dir, "s.jsonl"), handLines(id, ended...), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.RolloverLoopPageOf(ctx, id, p2.NextCursor, 10); code(err) != contextd.EConflict {
		t.Errorf("cursor after the loop ended: %v, want code %s", err, contextd.EConflict)
	}
	if p, err := svc.RolloverLoopPageOf(ctx, id, "", 10); err != nil || p.Windows != 0 || len(p.WindowIDs) != 0 || p.NextCursor != "" {
		t.Errorf("first page with no loop: %+v %v, want windows 0 and no ids", p, err)
	}
}
