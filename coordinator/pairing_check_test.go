package coordinator

import (
	"fmt"
	"sort"

	"contextd/session"
)

// The test oracles of the pairing rule: the order the extension sends
// under a plan, and pi-ai's replay of a request.

// Sent returns the indices of msgs in the order the extension sends them
// under plan p: from p.Start, without the dropped results, with the moves
// applied in order.
func (p PairPlan) Sent(n int) []int {
	dropped := make(map[int]bool, len(p.Drop))
	for _, i := range p.Drop {
		dropped[i] = true
	}
	var out []int
	for i := p.Start; i < n; i++ {
		if !dropped[i] {
			out = append(out, i)
		}
	}
	for _, mv := range p.Moves {
		out = removeInt(out, mv.Msg)
		at := 0
		if mv.After >= 0 {
			for k, v := range out {
				if v == mv.After {
					at = k + 1
					break
				}
			}
		}
		out = append(out[:at], append([]int{mv.Msg}, out[at:]...)...)
	}
	return out
}

func removeInt(s []int, v int) []int {
	for k, x := range s {
		if x == v {
			return append(s[:k:k], s[k+1:]...)
		}
	}
	return s
}

// CheckPairing replays sent (messages in send order) the way pi-ai's
// transformMessages does (errored and aborted assistants skipped,
// synthetic results for calls still open at the next assistant or
// user-role message and at the end) and returns every violation of the
// provider rule: a result that does not directly follow (after sibling
// results) the replayed assistant holding its call, or a call id with
// other than exactly one result. nil means the request is well paired.
func CheckPairing(sent []PairMessage) []string {
	var bad []string
	type wire struct {
		role  string
		calls map[string]bool
		id    string
	}
	var out []wire
	open := map[string]bool{}
	closeOpen := func() {
		ids := make([]string, 0, len(open))
		for id := range open {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			out = append(out, wire{role: session.RoleToolResult, id: id})
		}
		open = map[string]bool{}
	}
	for _, m := range sent {
		switch {
		case m.Role == session.RoleAssistant:
			closeOpen()
			if !m.replayed() {
				continue
			}
			out = append(out, wire{role: m.Role, calls: callSet(m.Calls)})
			open = callSet(m.Calls)
		case m.Role == session.RoleToolResult:
			delete(open, m.CallID)
			out = append(out, wire{role: m.Role, id: m.CallID})
		case !closesCalls(m.Role):
		default:
			closeOpen()
			out = append(out, wire{role: "user"})
		}
	}
	closeOpen()
	count := map[string]int{}
	for k, w := range out {
		switch w.role {
		case session.RoleAssistant:
			for id := range w.calls {
				count[id] += 0
			}
		case session.RoleToolResult:
			count[w.id]++
			j := k - 1
			for j >= 0 && out[j].role == session.RoleToolResult {
				j--
			}
			if j < 0 || out[j].role != session.RoleAssistant || !out[j].calls[w.id] {
				bad = append(bad, fmt.Sprintf("result for call %s does not follow the assistant that called it", w.id))
			}
		}
	}
	ids := make([]string, 0, len(count))
	for id := range count {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if count[id] != 1 {
			bad = append(bad, fmt.Sprintf("call %s has %d results", id, count[id]))
		}
	}
	return bad
}
