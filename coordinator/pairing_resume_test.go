package coordinator

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	"contextd/session"
)

// The pairing walk resumed after appended messages (planPairing with a
// base, what /context does after Pi appends) gives what a walk of the
// whole list gives, and both what the pairing rule's first implementation
// (pairingReference, below) gave.

// TestPlanPairingResumedMatchesFresh: hand-made lists, each walked whole
// and resumed at every split point; the resumed plan's values are written
// out for one list.
func TestPlanPairingResumedMatchesFresh(t *testing.T) {
	// A stray for c9 at 3, a duplicate for c1 at 6, the boundary B1 at 4
	// written inside the pair A2/R2 (moved after R2), and an open call
	// at the end.
	msgs := []PairMessage{pu("U"), pa("A1", "c1"), pr("R1", "c1"), pr("S", "c9"), pa("A2", "c2"), pb("B1", "w1"), pr("R2", "c2"), pr("D", "c1"), pa("A3", "c3")}
	want := PairPlan{Start: 0, Drop: []int{3, 7}, Moves: []PairMove{{Msg: 5, After: 6}}, Problems: []SessionProblem{
		{Reason: "orphaned_tool_result", Detail: "toolResult S for call c9 is not sent: no call of a replayed assistant is open before it (its call is missing, in an errored or aborted assistant, before the slice, or already closed)"},
		{Reason: "message_inside_tool_call", Detail: "custom message B1 is written between a call and its result; it is sent after the results"},
		{Reason: "duplicate_tool_result", Detail: "toolResult D for call c1 is not sent: its call already has a result"},
	}}
	for n := 0; n <= len(msgs); n++ {
		base := planPairing(msgs[:n], 0, nil)
		before, _, _ := base.result(msgs[:n])
		got, dropOcc, moveOcc := planPairing(msgs, 0, base).result(msgs)
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(dropOcc, []int{1, 2}) || !reflect.DeepEqual(moveOcc, []int{1}) {
			t.Errorf("resumed at %d: %+v occurrences %v %v, want %+v [1 2] [1]", n, got, dropOcc, moveOcc, want)
		}
		if after, _, _ := base.result(msgs[:n]); !reflect.DeepEqual(before, after) {
			t.Errorf("resumed at %d: the base changed: %+v, was %+v", n, after, before)
		}
	}
	// The boundary B1 at the end, its call open: undecided until a
	// result or another message follows (resumable false until then).
	open := []PairMessage{pu("U"), pa("A", "c"), pb("B", "w")}
	if st := planPairing(open, 0, nil); st.resumable {
		t.Errorf("a walk ending in an undecided look-ahead is resumable")
	}
	for _, tail := range [][]PairMessage{{pr("R", "c")}, {pu("V"), pr("R", "c")}} {
		all := append(append([]PairMessage(nil), open...), tail...)
		got, _, _ := planPairing(all, 0, planPairing(open, 0, nil)).result(all)
		ref, _, _ := pairingReference(all, 0)
		if !reflect.DeepEqual(got, ref) {
			t.Errorf("after %v: %+v, want %+v", ids(tail, []int{0}), got, ref)
		}
	}
}

// TestPlanPairingResumedProperty: random provider contexts (as
// TestPlanPairingProperty, with call ids reused across assistants), at
// every start, extended one message at a time from the previous walk,
// and resumed from every split: plan and occurrences equal the
// reference's for every prefix.
func TestPlanPairingResumedProperty(t *testing.T) {
	rng := rand.New(rand.NewSource(28))
	checked := 0
	for s := 0; s < 300; s++ {
		msgs := randomPairContext(rng)
		for start := 0; start <= len(msgs); start++ {
			var prev *pairingState
			for n := 0; n <= len(msgs); n++ {
				ref, refDrop, refMove := pairingReference(msgs[:n], start)
				st := planPairing(msgs[:n], start, prev)
				got, dropOcc, moveOcc := st.result(msgs[:n])
				if !reflect.DeepEqual(got, ref) || !reflect.DeepEqual(dropOcc, refDrop) || !reflect.DeepEqual(moveOcc, refMove) {
					t.Fatalf("session %d start %d, extended to %d: %+v %v %v, want %+v %v %v\nmsgs %+v", s, start, n, got, dropOcc, moveOcc, ref, refDrop, refMove, msgs[:n])
				}
				prev = st
				checked++
			}
			split := rng.Intn(len(msgs) + 1)
			got, _, _ := planPairing(msgs, start, planPairing(msgs[:split], start, nil)).result(msgs)
			if ref, _, _ := pairingReference(msgs, start); !reflect.DeepEqual(got, ref) {
				t.Fatalf("session %d start %d, resumed at %d: %+v, want %+v", s, start, split, got, ref)
			}
		}
	}
	if checked < 50000 {
		t.Fatalf("only %d prefixes checked", checked)
	}
}

// randomPairContext is a random provider context of 4 to 40 messages,
// its kinds drawn from a weighted alphabet: assistants (a: up to three
// calls, one in eight an id called before; some errored or aborted),
// results (r: of a call made before, else of one never made), users,
// system messages and boundaries.
func randomPairContext(rng *rand.Rand) []PairMessage {
	n := 4 + rng.Intn(36)
	msgs := make([]PairMessage, 0, n)
	var called []string
	for len(msgs) < n {
		id := "e" + itoa(len(msgs))
		var m PairMessage
		if kind := "aaarrrrusbb"[rng.Intn(11)]; kind == 'a' {
			m = pa(id)
			for range rng.Intn(4) {
				c := "c" + itoa(len(called))
				if len(called) > 0 && rng.Intn(8) == 0 {
					c = called[rng.Intn(len(called))]
				}
				m.Calls, called = append(m.Calls, PairCall{ID: c}), append(called, c)
			}
			m.StopReason = [6]string{"error", "aborted"}[rng.Intn(6)]
		} else if kind == 'r' && len(called) > 0 {
			m = pr(id, called[rng.Intn(len(called))])
		} else if kind == 'r' {
			m = pr(id, "none")
		} else if kind == 'u' {
			m = pu(id)
		} else if kind == 's' {
			m = PairMessage{EntryID: id, Role: "system"}
		} else {
			m = pb(id, id)
		}
		m.Line = len(msgs) + 1
		msgs = append(msgs, m)
	}
	return msgs
}

// pairingReference is the pairing rule as PlanPairing first implemented
// it (string sets over the whole list, no resumption), with the
// occurrences /context then counted from its plan: the oracle of the
// walk.
func pairingReference(msgs []PairMessage, start int) (PairPlan, []int, []int) {
	p := PairPlan{Start: start}
	lookAhead := func(i int, calls map[string]bool) bool {
		found, _ := answersAfter(msgs, i, calls)
		return found
	}
	if start > 0 && start < len(msgs) && closesCalls(msgs[start].Role) {
		j := start - 1
		for j >= 0 && msgs[j].Role == session.RoleToolResult {
			j--
		}
		if j >= 0 && msgs[j].Role == session.RoleAssistant && msgs[j].replayed() {
			left := callSet(msgs[j].Calls)
			for _, r := range msgs[j+1 : start] {
				delete(left, r.CallID)
			}
			if lookAhead(start+1, left) {
				p.Start = j
				p.Problems = append(p.Problems, SessionProblem{Line: msgs[start].Line, Reason: "boundary_inside_tool_call",
					Detail: fmt.Sprintf("boundary %s is written between the calls of assistant %s and their results; the context starts at the assistant and the boundary follows the results", msgs[start].EntryID, msgs[j].EntryID)})
			}
		}
	}
	waiting, done := map[string]bool{}, map[string]bool{}
	var held []int
	last := -1
	release := func() {
		for k, m := range held {
			after := last
			if k > 0 {
				after = held[k-1]
			}
			p.Moves = append(p.Moves, PairMove{Msg: m, After: after})
		}
		held, last = nil, -1
	}
	answerAll := func() {
		for id := range waiting {
			done[id] = true
		}
		waiting = map[string]bool{}
	}
	for i := p.Start; i < len(msgs); i++ {
		m := msgs[i]
		if m.Role == session.RoleAssistant {
			release()
			answerAll()
			for _, c := range m.Calls {
				if m.replayed() {
					waiting[c.ID] = true
				}
			}
		} else if m.Role == session.RoleToolResult && waiting[m.CallID] {
			delete(waiting, m.CallID)
			done[m.CallID] = true
			if held != nil {
				last = i
			}
		} else if m.Role == session.RoleToolResult {
			reason, why := "orphaned_tool_result", "no call of a replayed assistant is open before it (its call is missing, in an errored or aborted assistant, before the slice, or already closed)"
			if done[m.CallID] {
				reason, why = "duplicate_tool_result", "its call already has a result"
			}
			p.Drop = append(p.Drop, i)
			p.Problems = append(p.Problems, SessionProblem{Line: m.Line, Reason: reason,
				Detail: fmt.Sprintf("toolResult %s for call %s is not sent: %s", m.EntryID, m.CallID, why)})
		} else if closesCalls(m.Role) && len(waiting) > 0 && m.Key != nil && lookAhead(i+1, waiting) {
			held = append(held, i)
			if i != start || p.Start == start {
				p.Problems = append(p.Problems, SessionProblem{Line: m.Line, Reason: "message_inside_tool_call",
					Detail: fmt.Sprintf("%s message %s is written between a call and its result; it is sent after the results", m.Role, m.EntryID)})
			}
		} else if closesCalls(m.Role) {
			release()
			answerAll()
		}
	}
	release()
	sort.Ints(p.Drop)
	// A result's occurrence: its rank among the results of its call id
	// from the start.
	rank := func(i int) int {
		n := 0
		for _, m := range msgs[p.Start : i+1] {
			if m.Role == session.RoleToolResult && m.CallID == msgs[i].CallID {
				n++
			}
		}
		return n
	}
	var dropOcc, moveOcc []int
	for _, i := range p.Drop {
		dropOcc = append(dropOcc, rank(i))
	}
	for _, mv := range p.Moves {
		if msgs[mv.After].Role == session.RoleToolResult {
			moveOcc = append(moveOcc, rank(mv.After))
		} else {
			moveOcc = append(moveOcc, 0)
		}
	}
	return p, dropOcc, moveOcc
}

// TestContextPairingResumedMatchesUncached: /context after each appended
// entry (its pairing walk resumed from the previous leaf's) answers as a
// Service without the memo, through strays, a duplicate, a boundary
// written inside a tool call (a new window: the walk starts again), and
// a branch switch back before that boundary; the two final answers are
// written out.
func TestContextPairingResumedMatchesUncached(t *testing.T) {
	const sid = "019f0000-0000-7000-8000-00000000aa28"
	data := handLines(sid, hBoundary(0, "w0", "w0", ""), hUser("start"), hAssistant(hCall("c1", "read")), hResult("c1", "read", "one"))
	cached, plain, dir := cacheTwins(t, map[string][]byte{"s.jsonl": data})
	f, err := os.OpenFile(filepath.Join(dir, "s.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	same := func(leaf string) ContextAnswer {
		t.Helper()
		a, errA := cached.Context(t.Context(), sid, ContextRequest{LeafID: leaf})
		b, errB := plain.Context(t.Context(), sid, ContextRequest{LeafID: leaf})
		if errA != nil || errB != nil {
			t.Fatal(errA, errB)
		}
		if d := cmp.Diff(b, a); d != "" {
			t.Fatalf("leaf %q: /context cached vs uncached (-uncached +cached):\n%s", leaf, d)
		}
		return a
	}
	same("")
	add := func(id, parent, body string) {
		t.Helper()
		if _, err := f.WriteString(`{` + body + `,"id":"` + id + `","parentId":"` + parent + `","timestamp":"2026-08-01T10:00:09.000Z"}` + "\n"); err != nil {
			t.Fatal(err)
		}
		same("")
	}
	parent := "h0000004"
	for i, body := range []string{
		hResult("c9", "read", "stray"), // x0: orphaned
		hUser("u1"),
		hAssistant(hCall("c2", "read")),  // x2
		hBoundary(1, "w0", "w1", "w0"),   // x3: boundary_inside_tool_call
		hResult("c2", "read", "two"),     // x4
		hResult("c1", "read", "late"),    // x5: orphaned (its call is before the slice)
		hUser("u2"),                      // x6
		hResult("c2", "read", "again"),   // x7: duplicate_tool_result
		hAssistant(hCall("c3", "read")),  // x8
		hResult("c3", "read", "three"),   // x9
		hResult("c9", "read", "stray 2"), // x10: orphaned
		hUser("u3"),                      // x11
	} {
		id := "x" + itoa(i)
		add(id, parent, body)
		parent = id
	}
	// A branch switch: on from the assistant before the boundary x3.
	add("y0", "x2", hResult("c2", "read", "two on y"))
	add("y1", "y0", hResult("c9", "read", "stray on y"))
	add("y2", "y1", hUser("u4"))

	got := same("")
	if got.Window == nil || got.Window.CurrentWindowID != "w0" || !slices.Equal(got.OrphanedToolResults, []string{"x0", "y1"}) ||
		!slices.Equal(got.Projection.Drop, []MessageKey{{Role: "toolResult", ToolCallID: "c9", Occurrence: 1}, {Role: "toolResult", ToolCallID: "c9", Occurrence: 2}}) ||
		got.Projection.Move != nil {
		t.Errorf("leaf y2: window %+v orphaned %v drop %+v move %+v; want w0, [x0 y1], c9 occurrences 1 and 2, no move", got.Window, got.OrphanedToolResults, got.Projection.Drop, got.Projection.Move)
	}
	got = same("x11")
	wantMove := []MoveStep{{Message: MessageKey{Role: "custom", CustomType: session.CustomTypeWindow, WindowID: "w1"}, After: MessageKey{Role: "toolResult", ToolCallID: "c2", Occurrence: 1}}}
	if got.Window == nil || got.Window.CurrentWindowID != "w1" || got.SliceFromEntryID != "x2" ||
		!slices.Equal(got.OrphanedToolResults, []string{"x5", "x7", "x10"}) ||
		!slices.Equal(got.Projection.Drop, []MessageKey{{Role: "toolResult", ToolCallID: "c1", Occurrence: 1}, {Role: "toolResult", ToolCallID: "c2", Occurrence: 2}, {Role: "toolResult", ToolCallID: "c9", Occurrence: 1}}) ||
		!slices.Equal(got.Projection.Move, wantMove) {
		t.Errorf("leaf x11: window %+v slice from %s orphaned %v drop %+v move %+v", got.Window, got.SliceFromEntryID, got.OrphanedToolResults, got.Projection.Drop, got.Projection.Move)
	}
	var reasons []string
	for _, p := range got.Problems {
		if p.Reason != "concurrent_writers" { // the branch switch (writers_file.go), not pairing
			reasons = append(reasons, p.Reason)
		}
	}
	if want := []string{"boundary_inside_tool_call", "orphaned_tool_result", "duplicate_tool_result", "orphaned_tool_result"}; !slices.Equal(reasons, want) {
		t.Errorf("leaf x11: problems %v, want %v", reasons, want)
	}
}
