package coordinator

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"

	"contextd"
)

func hAssistantStop(parts, stop string) string {
	return `"type":"message","message":{"role":"assistant","content":[` + parts + `],"stopReason":"` + stop + `","timestamp":1785578400000}`
}
func hErrResult(callID, name, text string) string {
	return strings.Replace(hResult(callID, name, text), `"isError":false`, `"isError":true`, 1)
}

func wantConflict(t *testing.T, err error, contains ...string) {
	t.Helper()
	var e *contextd.Error
	if !errors.As(err, &e) || e.Code != contextd.EOpenToolCalls {
		t.Fatalf("err %v, want EOpenToolCalls", err)
	}
	for _, c := range contains {
		if !strings.Contains(err.Error(), c) {
			t.Errorf("err %q does not name %q", err, c)
		}
	}
}

// TestSettleRefusesOpenCalls: case-04. The leaf assistant called
// new_context and bash in parallel; with only new_context's result written,
// settle (Tree and Local) is refused with a conflict naming call_sh, and
// succeeds once the bash result is on the leaf. The states Pi writes after
// ctx.abort() are accepted: calls answered "Operation aborted", calls left
// unanswered followed by an aborted assistant, and an assistant aborted
// while streaming its calls.
func TestSettleRefusesOpenCalls(t *testing.T) {
	ctx := t.Context()
	base := []string{
		hUser("set up the repo"),                                                     // h0000001
		hAssistant(`{"type":"text","text":"sure"}`),                                  // h0000002
		hBoundary(0, "w0", "w0", ""),                                                 // h0000003
		hUser("do the migration then start fresh"),                                   // h0000004
		hAssistant(hCall("call_nc", "new_context") + "," + hCall("call_sh", "bash")), // h0000005
		hResult("call_nc", "new_context", "A new context window will start without summarizing conversation history."), // h0000006
	}
	for _, tc := range []struct {
		name  string
		extra []string
		leaf  string
		open  bool
	}{
		{"bash unresolved", nil, "h0000006", true},
		{"at the assistant", nil, "h0000005", true},
		{"bash answered", []string{hResult("call_sh", "bash", "tests passed")}, "h0000007", false},
		{"bash aborted", []string{hErrResult("call_sh", "bash", "Operation aborted")}, "h0000007", false},
		{"unanswered, then an aborted assistant", []string{hAssistantStop("", "aborted")}, "h0000007", false},
	} {
		for _, mode := range []string{"tree", "local"} {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				file := handLines("sess-"+mode, append(append([]string{}, base...), tc.extra...)...)
				svc, dir := localService(t, map[string][]byte{"s.jsonl": file})
				if _, _, err := svc.Register(ctx, "sess-"+mode, RegisterRequest{SessionFile: filepath.Join(dir, "s.jsonl"), Mode: mode}); err != nil {
					t.Fatal(err)
				}
				r, _, err := svc.CreateRollover(ctx, "sess-"+mode, RolloverRequest{LeafID: "h0000005", CommandContextReady: true})
				if err != nil {
					t.Fatal(err)
				}
				_, err = svc.SettleRollover(ctx, "sess-"+mode, r.RolloverID, SettleRequest{LeafID: tc.leaf})
				if tc.open {
					wantConflict(t, err, "call_sh (bash)", tc.leaf)
					if strings.Contains(err.Error(), "call_nc") {
						t.Errorf("err %q names the new_context call", err)
					}
					return
				}
				if err != nil {
					t.Fatalf("settle: %v", err)
				}
			})
		}
	}
	// An assistant aborted while streaming: pi-ai never sends its calls.
	file := handLines("sess-ab", hUser("go"), hBoundary(0, "w0", "w0", ""), hUser("more"),
		hAssistantStop(hCall("call_nc", "new_context")+","+hCall("call_x", "bash"), "aborted"))
	svc, dir := localService(t, map[string][]byte{"s.jsonl": file})
	if _, _, err := svc.Register(ctx, "sess-ab", RegisterRequest{SessionFile: filepath.Join(dir, "s.jsonl"), Mode: "tree"}); err != nil {
		t.Fatal(err)
	}
	r, _, err := svc.CreateRollover(ctx, "sess-ab", RolloverRequest{LeafID: "h0000004", CommandContextReady: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.SettleRollover(ctx, "sess-ab", r.RolloverID, SettleRequest{LeafID: "h0000004"}); err != nil {
		t.Fatalf("settle after an aborted assistant: %v", err)
	}
}

// TestWindowsRefusesOpenCalls: Local's next boundary is refused while the
// leaf's batch has unanswered calls and no new_context call (the boundary
// would land inside a pair), and allowed when new_context is in the batch
// (the extension steers the boundary after the batch) or the calls are
// answered.
func TestWindowsRefusesOpenCalls(t *testing.T) {
	ctx := t.Context()
	for _, tc := range []struct {
		name    string
		entries []string
		refused bool
	}{
		{"bash open", []string{hBoundary(0, "w0", "w0", ""), hUser("x"), hAssistant(hCall("c_ls", "ls") + "," + hCall("c_cat", "cat")), hResult("c_ls", "ls", "a")}, true},
		{"new_context batch", []string{hBoundary(0, "w0", "w0", ""), hUser("x"), hAssistant(hCall("c_nc", "new_context") + "," + hCall("c_cat", "cat"))}, false},
		{"answered", []string{hBoundary(0, "w0", "w0", ""), hUser("x"), hAssistant(hCall("c_ls", "ls")), hResult("c_ls", "ls", "a")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc, dir := localService(t, map[string][]byte{"s.jsonl": handLines("sess-w", tc.entries...)})
			before, _ := os.ReadFile(filepath.Join(dir, "s.jsonl"))
			_, err := svc.Windows(ctx, "sess-w", WindowsRequest{})
			if tc.refused {
				wantConflict(t, err, "c_cat (cat)")
			} else if err != nil {
				t.Fatal(err)
			}
			after, _ := os.ReadFile(filepath.Join(dir, "s.jsonl"))
			if string(before) != string(after) {
				t.Error("session file changed")
			}
		})
	}
}

// TestRolloverLoop: windows w1, w2, w3 each closed by the next boundary
// with only a new_context call inside: GET reports the loop (3 windows,
// most recent first) and the next boundary requested at a leaf whose
// current window also made no progress counts in
// contextd_rollover_loops_total. A successful bash result in w2 breaks the
// run (only w3 is empty since), and an errored result is no progress.
func TestRolloverLoop(t *testing.T) {
	ctx := t.Context()
	nc := func(id string) []string {
		return []string{hAssistant(hCall(id, "new_context")), hResult(id, "new_context", "A new context window will start without summarizing conversation history.")}
	}
	build := func(w2 []string) []string {
		es := []string{hBoundary(0, "w0", "w0", ""), hUser("start"), hAssistant(hCall("r0", "read")), hResult("r0", "read", "a")}
		es = append(es, nc("n0")...)
		es = append(es, hBoundary(1, "w0", "w1", "w0"))
		es = append(es, nc("n1")...)
		es = append(es, hBoundary(2, "w0", "w2", "w1"))
		es = append(es, w2...)
		es = append(es, nc("n2")...)
		es = append(es, hBoundary(3, "w0", "w3", "w2"))
		es = append(es, hAssistant(hCall("b3", "bash")), hErrResult("b3", "bash", "exit 1"))
		es = append(es, nc("n3")...)
		es = append(es, hBoundary(4, "w0", "w4", "w3"))
		return es
	}
	for _, tc := range []struct {
		name string
		w2   []string
		want *RolloverLoop
		inc  float64
	}{
		{"loop", nil, &RolloverLoop{Windows: 3, WindowIDs: []string{"w3", "w2", "w1"}}, 1},
		{"progress in w2", []string{hAssistant(hCall("b2", "bash")), hResult("b2", "bash", "ok")}, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc, _ := localService(t, map[string][]byte{"s.jsonl": handLines("sess-loop", build(tc.w2)...)})
			svc.Metrics = NewMetrics(nil)
			st, err := svc.SessionStateOf(ctx, "sess-loop")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, st.RolloverLoop); diff != "" {
				t.Errorf("rollover_loop (-want +got):\n%s", diff)
			}
			// The current window w4 made no progress either: a next
			// boundary now closes a 4th (or, with progress in w2, a 2nd)
			// empty window.
			if _, err := svc.Windows(ctx, "sess-loop", WindowsRequest{}); err != nil {
				t.Fatal(err)
			}
			if got := loopCount(t, svc, "local"); got != tc.inc {
				t.Errorf("contextd_rollover_loops_total{mode=local} = %v, want %v", got, tc.inc)
			}
		})
	}
}

func loopCount(t *testing.T, svc *Service, mode string) float64 {
	t.Helper()
	var m dto.Metric
	if err := svc.Metrics.RolloverLoops.WithLabelValues(mode).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestRolloverLoopTree: in Tree mode the closed windows are the archives on
// the branch. Window w0 holds the user's request; four rollovers then
// archive w0 and three windows that only called new_context: GET reports
// those three, most recent first, and the fourth rollover request (closing
// the third empty window) is counted.
func TestRolloverLoopTree(t *testing.T) {
	ctx := t.Context()
	file := handLines("sess-tl", hBoundary(0, "w0", "w0", ""), hUser("migrate"), hAssistant(hCall("nc0", "new_context")),
		hResult("nc0", "new_context", "A new context window will start without summarizing conversation history."))
	svc, dir := localService(t, map[string][]byte{"s.jsonl": file})
	svc.Metrics = NewMetrics(nil)
	path := filepath.Join(dir, "s.jsonl")
	if _, _, err := svc.Register(ctx, "sess-tl", RegisterRequest{SessionFile: path, Mode: "tree"}); err != nil {
		t.Fatal(err)
	}
	n := 100
	add := func(parent string, e map[string]any) string {
		n++
		id := fmt.Sprintf("t%07d", n)
		e["id"], e["timestamp"] = id, "2026-08-01T10:01:00.000Z"
		if parent == "" {
			e["parentId"] = nil
		} else {
			e["parentId"] = parent
		}
		b, _ := json.Marshal(e)
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
		return id
	}
	raw := func(line string) map[string]any {
		var m map[string]any
		if err := json.Unmarshal([]byte("{"+line+"}"), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	call, leaf := "h0000003", "h0000004"
	var archived []string
	for i := 0; i < 4; i++ {
		a, err := svc.Context(ctx, "sess-tl", ContextRequest{LeafID: leaf})
		if err != nil {
			t.Fatal(err)
		}
		archived = append(archived, a.Window.CurrentWindowID)
		r, _, err := svc.CreateRollover(ctx, "sess-tl", RolloverRequest{LeafID: call, CommandContextReady: true})
		if err != nil {
			t.Fatal(err)
		}
		st, err := svc.SettleRollover(ctx, "sess-tl", r.RolloverID, SettleRequest{LeafID: leaf})
		if err != nil {
			t.Fatal(err)
		}
		parent := ""
		if st.SummaryParentID != nil {
			parent = *st.SummaryParentID
		}
		sum := add(parent, map[string]any{"type": "branch_summary", "fromId": st.ArchivedLeafID, "summary": fmt.Sprintf("window %d", i), "fromHook": false})
		plan, err := svc.CommitRollover(ctx, "sess-tl", r.RolloverID, CommitRequest{SummaryEntryID: sum})
		if err != nil {
			t.Fatal(err)
		}
		last := sum
		for _, pe := range plan.Append {
			b, _ := json.Marshal(pe)
			var m map[string]any
			_ = json.Unmarshal(b, &m)
			last = add(last, m)
		}
		if _, err := svc.CompleteRollover(ctx, "sess-tl", r.RolloverID); err != nil {
			t.Fatal(err)
		}
		id := fmt.Sprintf("nc%d", i+1)
		call = add(last, raw(hAssistant(hCall(id, "new_context"))))
		leaf = add(call, raw(hResult(id, "new_context", "A new context window will start without summarizing conversation history.")))
	}
	st, err := svc.SessionStateOf(ctx, "sess-tl")
	if err != nil {
		t.Fatal(err)
	}
	want := &RolloverLoop{Windows: 3, WindowIDs: []string{archived[3], archived[2], archived[1]}}
	if diff := cmp.Diff(want, st.RolloverLoop); diff != "" {
		t.Errorf("rollover_loop (archived %v) (-want +got):\n%s", archived, diff)
	}
	// Requests 1-2 closed w0 (progress) and w1; 3 closed w2 (2nd empty);
	// 4 closed w3, the 3rd empty window in a row.
	if got := loopCount(t, svc, "tree"); got != 1 {
		t.Errorf("contextd_rollover_loops_total{mode=tree} = %v, want 1", got)
	}
}

// TestRolloverLoopWindowIDsBounded: a loop of 40 empty windows is counted
// whole (windows 40) but names only the 25 most recent window ids and a
// cursor for the rest, so GET /v1/sessions/{id} stays small however long
// the loop (at a03e7ac a loop of 100,000 windows made a 3.9 MB answer).
func TestRolloverLoopWindowIDsBounded(t *testing.T) {
	ctx := t.Context()
	nc := func(id string) []string {
		return []string{hAssistant(hCall(id, "new_context")), hResult(id, "new_context", "A new context window will start without summarizing conversation history.")}
	}
	es := []string{hBoundary(0, "w0", "w0", ""), hUser("start"), hAssistant(hCall("r0", "read")), hResult("r0", "read", "a")}
	es = append(es, nc("n0")...)
	for i := 1; i <= 41; i++ {
		es = append(es, hBoundary(i, "w0", fmt.Sprintf("w%d", i), fmt.Sprintf("w%d", i-1)))
		if i < 41 {
			es = append(es, nc(fmt.Sprintf("n%d", i))...)
		}
	}
	svc, _ := localService(t, map[string][]byte{"s.jsonl": handLines("sess-long-loop", es...)})
	st, err := svc.SessionStateOf(ctx, "sess-long-loop")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := 40; i > 15; i-- {
		want = append(want, fmt.Sprintf("w%d", i))
	}
	if st.RolloverLoop == nil || st.RolloverLoop.NextCursor == "" {
		t.Fatalf("rollover_loop %+v: want a next_cursor for the 15 older ids (TestRolloverLoopPages pages them)", st.RolloverLoop)
	}
	if diff := cmp.Diff(&RolloverLoop{Windows: 40, WindowIDs: want, NextCursor: st.RolloverLoop.NextCursor}, st.RolloverLoop); diff != "" {
		t.Errorf("rollover_loop (-want +got):\n%s", diff)
	}
}
