package coordinator

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"
)

func pa(id string, calls ...string) PairMessage {
	m := PairMessage{EntryID: id, Role: "assistant"}
	for _, c := range calls {
		m.Calls = append(m.Calls, PairCall{ID: c})
	}
	return m
}
func pr(id, call string) PairMessage {
	return PairMessage{EntryID: id, Role: "toolResult", CallID: call}
}
func pu(id string) PairMessage { return PairMessage{EntryID: id, Role: "user"} }
func pb(id, win string) PairMessage {
	return PairMessage{EntryID: id, Role: "custom", Key: &MessageKey{Role: "custom", CustomType: "codex-context-window", WindowID: win}}
}

func ids(msgs []PairMessage, idx []int) []string {
	out := []string{}
	for _, i := range idx {
		out = append(out, msgs[i].EntryID)
	}
	return out
}

// TestPlanPairingCases: hand-computed sends for each kind of damage.
func TestPlanPairingCases(t *testing.T) {
	errored := pa("A", "x")
	errored.StopReason = "error"
	for _, tc := range []struct {
		name  string
		msgs  []PairMessage
		start int
		sent  []string
		why   []string
	}{
		// case-01: boundary W1 between assistant[call_r1] and its result.
		{"boundary inside pair", []PairMessage{pb("B0", "w0"), pu("U"), pa("A", "r1"), pb("B1", "w1"), pr("R", "r1"), pa("D")}, 3,
			[]string{"A", "R", "B1", "D"}, []string{"boundary_inside_tool_call"}},
		// Parallel calls straddling the boundary: one result before, one after.
		{"parallel straddle", []PairMessage{pu("U"), pa("A", "c1", "c2"), pr("R1", "c1"), pb("B1", "w1"), pr("R2", "c2"), pa("D")}, 3,
			[]string{"A", "R1", "R2", "B1", "D"}, []string{"boundary_inside_tool_call"}},
		// case-04 after the cut: a late result with no call before it.
		{"late result on new branch", []PairMessage{pu("U"), pa("S"), pb("B", "w"), pr("R", "sh"), pa("D")}, 0,
			[]string{"U", "S", "B", "D"}, []string{"orphaned_tool_result"}},
		{"duplicate result", []PairMessage{pa("A", "c"), pr("R1", "c"), pr("R2", "c"), pa("D")}, 0,
			[]string{"A", "R1", "D"}, []string{"duplicate_tool_result"}},
		// pi-ai skips an errored assistant: its result is a stray.
		{"errored assistant", []PairMessage{pu("U"), errored, pr("R", "x"), pa("D")}, 0,
			[]string{"U", "A", "D"}, []string{"orphaned_tool_result"}},
		// A user message between call and result: pi-ai answers the call
		// synthetically there, so the real result would be a second one.
		{"user inside pair", []PairMessage{pa("A", "c"), pu("U"), pr("R", "c"), pa("D")}, 0,
			[]string{"A", "U", "D"}, []string{"duplicate_tool_result"}},
		// A keyed message (a non-current boundary) inside a pair moves.
		{"keyed inside pair", []PairMessage{pa("A", "c"), pb("B", "w"), pr("R", "c"), pa("D")}, 0,
			[]string{"A", "R", "B", "D"}, []string{"message_inside_tool_call"}},
		// Both calls answered before the boundary: a late duplicate after
		// it does not pull the slice back.
		{"duplicate after boundary", []PairMessage{pu("U"), pa("A", "c"), pr("R", "c"), pb("B", "w"), pr("R2", "c"), pa("D")}, 3,
			[]string{"B", "D"}, []string{"orphaned_tool_result"}},
		{"clean", []PairMessage{pu("U"), pa("A", "c"), pr("R", "c"), pb("B", "w"), pa("D")}, 3,
			[]string{"B", "D"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := PlanPairing(tc.msgs, tc.start)
			sent := ids(tc.msgs, p.Sent(len(tc.msgs)))
			if !reflect.DeepEqual(sent, tc.sent) {
				t.Errorf("sent %v, want %v", sent, tc.sent)
			}
			var why []string
			for _, pr := range p.Problems {
				why = append(why, pr.Reason)
			}
			if !reflect.DeepEqual(why, tc.why) {
				t.Errorf("problems %v, want %v", why, tc.why)
			}
			var out []PairMessage
			for _, i := range p.Sent(len(tc.msgs)) {
				out = append(out, tc.msgs[i])
			}
			if bad := CheckPairing(out); bad != nil {
				t.Errorf("not paired: %v", bad)
			}
		})
	}
}

// TestCheckPairingCatches: the checker itself fails the unplanned case-01
// send (boundary between call and result, pi-ai's synthetic result plus
// the real one).
func TestCheckPairingCatches(t *testing.T) {
	got := CheckPairing([]PairMessage{pa("A", "r1"), pb("B1", "w1"), pr("R", "r1")})
	want := []string{"result for call r1 does not follow the assistant that called it", "call r1 has 2 results"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestPlanPairingProperty: random provider contexts (parallel calls,
// errored and aborted assistants, missing, duplicated and misplaced
// results, boundaries and users anywhere) at every start point: what the
// plan sends is always well paired.
func TestPlanPairingProperty(t *testing.T) {
	rng := rand.New(rand.NewSource(10))
	n := 0
	for s := 0; s < 3000; s++ {
		var msgs []PairMessage
		var calls []string
		next := 0
		for len(msgs) < 4+rng.Intn(20) {
			id := fmt.Sprintf("e%d", len(msgs))
			switch k := rng.Intn(10); {
			case k < 3:
				var cs []string
				for j := rng.Intn(4); j > 0; j-- {
					cs = append(cs, fmt.Sprintf("c%d", next))
					next++
				}
				m := pa(id, cs...)
				if rng.Intn(6) == 0 {
					m.StopReason = []string{"error", "aborted"}[rng.Intn(2)]
				}
				msgs, calls = append(msgs, m), append(calls, cs...)
			case k < 7 && len(calls) > 0:
				msgs = append(msgs, pr(id, calls[rng.Intn(len(calls))]))
			case k < 8:
				msgs = append(msgs, pu(id))
			case k < 9:
				msgs = append(msgs, PairMessage{EntryID: id, Role: "system"})
			default:
				msgs = append(msgs, pb(id, id))
			}
		}
		for start := range msgs {
			p := PlanPairing(msgs, start)
			dropped := map[int]bool{}
			for _, i := range p.Drop {
				dropped[i] = true
			}
			for _, mv := range p.Moves {
				if mv.After < p.Start || mv.Msg < p.Start || dropped[mv.After] || msgs[mv.Msg].Key == nil {
					t.Fatalf("session %d start %d: move %+v is not between sent messages or moves an unkeyed one\nmsgs %+v", s, start, mv, msgs)
				}
			}
			var out []PairMessage
			for _, i := range p.Sent(len(msgs)) {
				out = append(out, msgs[i])
			}
			n++
			if bad := CheckPairing(out); bad != nil {
				t.Fatalf("session %d start %d: %v\nmsgs %+v\nplan %+v", s, start, bad, msgs, p)
			}
		}
	}
	if n < 10000 {
		t.Fatalf("only %d contexts checked", n)
	}
}
