package coordinator

import (
	"slices"
	"strings"

	"contextd"

	"contextd/session"
)

// The tool-call pairing rule (docs/modes.md "Tool-call pairing"). Providers reject a request in
// which a toolResult does not directly follow (possibly after sibling
// results) the assistant message holding its toolCall, or in which a call
// id has no result or several. The extension sends Pi's context messages
// through convertToLlm and pi-ai's transformMessages
// (dist/api/transform-messages.js of pi-ai 0.85.1 and 1.6.0), which:
//   - skips assistant messages whose stopReason is "error" or "aborted"
//     (their tool calls are never sent, so results answering them are
//     strays);
//   - inserts a synthetic "No result provided" error result for every
//     call of the last assistant that has no result when the next
//     assistant or user-role message arrives, or at the end;
//   - keeps toolResult messages where they are, whatever precedes them.
//
// convertToLlm turns every role other than user, assistant and toolResult
// (custom, branchSummary, compactionSummary, bashExecution) into a user
// message; pi-ai 1.6 holds system messages back past pending results and
// 0.85 never closes pending calls on them, so system messages are
// transparent here.
//
// PlanPairing decides, from the messages Pi would send, what the extension
// must change so that the request pi-ai builds is well paired: drop stray
// results (no open call before them, or a second result for a call) and
// move a keyed message (a boundary, a branch summary) that sits between a
// call and its results to after the results. Unkeyed messages between a
// call and its results close the call (pi-ai answers it synthetically), so
// the later real results are dropped.

// PairMessage is one message of Pi's provider context as the pairing rule
// sees it.
type PairMessage struct {
	EntryID    string
	Line       int
	Role       string     // Pi message role (session.ContextMessage.Role)
	StopReason string     // assistant
	Calls      []PairCall // assistant: its toolCall blocks, in order
	CallID     string     // toolResult: toolCallId
	// Key names the message for a move (boundary, branch summary); nil
	// when it has no key the extension can match.
	Key *MessageKey
}

// PairCall is one toolCall content block of an assistant message: its id
// and tool name (one slice of these, not two of strings, keeps a
// PairMessage at 104 bytes: the cached list holds one per message).
type PairCall struct{ ID, Name string }

// replayed reports whether pi-ai sends m's tool calls.
func (m *PairMessage) replayed() bool {
	return m.StopReason != "error" && m.StopReason != "aborted"
}

// resultKey is the MessageKey of toolResult m whose 1-based rank among
// the messages with its toolCallId from the first one sent (the extension
// applies start_at before drop) is occurrence.
func (m *PairMessage) resultKey(occurrence int) MessageKey {
	return MessageKey{Role: session.RoleToolResult, ToolCallID: m.CallID, Occurrence: occurrence}
}

// closesCalls reports whether a message of this role ends the pending
// calls of the last assistant in pi-ai's replay (after convertToLlm).
func closesCalls(role string) bool {
	return role != session.RoleAssistant && role != session.RoleToolResult && role != "system"
}

// PairMove moves message Msg to directly after message After (indices
// into the planned messages).
type PairMove struct{ Msg, After int }

// PairPlan is the answer of PlanPairing.
type PairPlan struct {
	Start    int   // index of the first message sent
	Drop     []int // indices of toolResult messages not sent, ascending
	Moves    []PairMove
	Problems []SessionProblem
}

// PlanPairing applies the pairing rule to msgs, the provider context in
// Pi's order (Tree: hidden summaries already removed), sent from index
// start (Local: the current boundary; 0 otherwise). When the message at
// start is a boundary written between an assistant's calls and their
// results (the results follow it directly), the slice starts at that
// assistant instead and the boundary moves after the results.
func PlanPairing(msgs []PairMessage, start int) PairPlan {
	p, _, _ := planPairing(msgs, start, nil).result(msgs)
	return PairPlan{Start: p.Start, Drop: slices.Clone(p.Drop), Moves: slices.Clone(p.Moves), Problems: slices.Clone(p.Problems)}
}

// pairingState is PlanPairing's walk over msgs[:n] before its final
// flush: the plan so far and what the walk carries on with. Read-only once
// returned (the Service's memo keeps it with the pairing list it was
// made for: pairsVal.pairing).
type pairingState struct {
	start int // PlanPairing's start
	n     int // messages walked
	// resumable: no look-ahead of the walk reached msgs[n-1] undecided,
	// so that its decisions and this state hold for any list that
	// starts with msgs[:n] (planPairing with base).
	resumable  bool
	plan       PairPlan // Drop, Moves and Problems of msgs[:n], before the final flush
	dropOcc    []int    // occurrence of each plan.Drop result (pairKeyOf)
	moveOcc    []int    // occurrence of each plan.Moves[k].After (0 unless a toolResult)
	open       []string // calls of the last replayed assistant without a result yet
	pending    []int    // keyed messages to move after the results
	lastResult int
}

// planPairing walks msgs from start under the pairing rule. With base, a
// resumable state of the same start for a list msgs extends (base.n <=
// len(msgs), the same messages before), it walks on from base.n: the
// same state a walk from the start gives, for the messages after base.n
// only (/context after Pi appended an entry).
func planPairing(msgs []PairMessage, start int, base *pairingState) *pairingState {
	st := &pairingState{start: start, plan: PairPlan{Start: start}, lastResult: -1, resumable: true}
	open := map[string]bool{} // calls of the last replayed assistant without a result yet
	if base != nil && base.resumable && base.start == start && base.n >= base.plan.Start && base.n <= len(msgs) {
		*st = *base
		st.plan.Drop = slices.Clone(base.plan.Drop)
		st.plan.Moves = slices.Clone(base.plan.Moves)
		st.plan.Problems = slices.Clone(base.plan.Problems)
		st.dropOcc, st.moveOcc = slices.Clone(base.dropOcc), slices.Clone(base.moveOcc)
		st.pending = slices.Clone(base.pending)
		for _, id := range base.open {
			open[id] = true
		}
	} else {
		st.startAt(msgs)
		st.n = st.plan.Start
	}
	p := &st.plan
	walked := len(p.Drop)
	moved := len(p.Moves)
	seen := callsSeen{msgs: msgs, from: p.Start}
	closeOpen := func() {
		// Called for every message that closes calls: clearing keeps
		// the map (a new one each time cost 48 bytes a message).
		clear(open)
	}
	for i := st.n; i < len(msgs); i++ {
		m := &msgs[i]
		switch {
		case m.Role == session.RoleAssistant:
			st.flush()
			closeOpen()
			if m.replayed() {
				for _, c := range m.Calls {
					open[c.ID] = true
				}
			}
		case m.Role == session.RoleToolResult:
			if open[m.CallID] {
				delete(open, m.CallID)
				if len(st.pending) > 0 {
					st.lastResult = i
				}
				continue
			}
			// A call gets a result, real or pi-ai's synthetic one, once
			// it is open and no longer is: a result whose call is not
			// open answers a call already answered when a replayed
			// assistant from the start holds it.
			reason, why := "orphaned_tool_result", "no call of a replayed assistant is open before it (its call is missing, in an errored or aborted assistant, before the slice, or already closed)"
			if seen.called(i, m.CallID) {
				reason, why = "duplicate_tool_result", "its call already has a result"
			}
			p.Drop = append(p.Drop, i)
			p.Problems = append(p.Problems, SessionProblem{Line: m.Line, Reason: reason,
				Detail: "toolResult " + m.EntryID + " for call " + m.CallID + " is not sent: " + why})
		case !closesCalls(m.Role):
		default:
			if len(open) > 0 && m.Key != nil {
				found, undecided := answersAfter(msgs, i+1, open)
				st.resumable = st.resumable && !undecided
				if found {
					st.pending = append(st.pending, i)
					if i != start || p.Start == start {
						p.Problems = append(p.Problems, SessionProblem{Line: m.Line, Reason: "message_inside_tool_call",
							Detail: m.Role + " message " + m.EntryID + " is written between a call and its result; it is sent after the results"})
					}
					continue
				}
			}
			st.flush()
			closeOpen()
		}
	}
	st.n = max(len(msgs), st.n)
	st.open = st.open[:0:0]
	for id := range open {
		st.open = append(st.open, id)
	}
	st.dropOcc = append(st.dropOcc, occurrences(msgs, p.Start, p.Drop[walked:])...)
	st.moveOcc = append(st.moveOcc, moveOccurrences(msgs, p.Start, p.Moves[moved:])...)
	return st
}

// startAt applies the rule's start: when the message at start is a
// boundary written between an assistant's calls and their results (the
// results follow it directly), the plan starts at that assistant.
func (st *pairingState) startAt(msgs []PairMessage) {
	start := st.start
	if start > 0 && start >= len(msgs) {
		// A longer list may hold the message at start.
		st.resumable = false
	}
	if start <= 0 || start >= len(msgs) || !closesCalls(msgs[start].Role) {
		return
	}
	j := start - 1
	for j >= 0 && msgs[j].Role == session.RoleToolResult {
		j--
	}
	if j < 0 || msgs[j].Role != session.RoleAssistant || !msgs[j].replayed() {
		return
	}
	unanswered := callSet(msgs[j].Calls)
	for _, r := range msgs[j+1 : start] {
		delete(unanswered, r.CallID)
	}
	found, undecided := answersAfter(msgs, start+1, unanswered)
	st.resumable = !undecided
	if found {
		st.plan.Start = j
		st.plan.Problems = append(st.plan.Problems, SessionProblem{Line: msgs[start].Line, Reason: "boundary_inside_tool_call",
			Detail: "boundary " + msgs[start].EntryID + " is written between the calls of assistant " + msgs[j].EntryID + " and their results; the context starts at the assistant and the boundary follows the results"})
	}
}

// flush moves the pending keyed messages after the last result.
func (st *pairingState) flush() {
	after := st.lastResult
	for _, m := range st.pending {
		st.plan.Moves = append(st.plan.Moves, PairMove{Msg: m, After: after})
		after = m
	}
	st.pending, st.lastResult = st.pending[:0], -1
}

// result is the plan of msgs (the list st walked) after the final flush,
// with the occurrences of its dropped results and of its moves' After
// messages (pairKeyOf). Its slices may be st's: read-only.
func (st *pairingState) result(msgs []PairMessage) (PairPlan, []int, []int) {
	p, moveOcc := st.plan, st.moveOcc
	if len(st.pending) > 0 {
		fin := pairingState{pending: slices.Clone(st.pending), lastResult: st.lastResult}
		fin.flush()
		p.Moves = append(slices.Clip(p.Moves), fin.plan.Moves...)
		moveOcc = append(slices.Clip(moveOcc), moveOccurrences(msgs, p.Start, fin.plan.Moves)...)
	}
	return p, st.dropOcc, moveOcc
}

// callsSeen answers whether a replayed assistant of msgs[from:i] holds
// a call: by a scan back from i for the first few questions of a walk
// (a walk resumed after an append asks about its new results only),
// then from a set of their calls built once.
type callsSeen struct {
	msgs  []PairMessage
	from  int
	to    int             // set holds the calls of the replayed assistants of msgs[from:to]
	set   map[string]bool // nil until built
	scans int
}

// called reports whether a replayed assistant of msgs[from:i] holds a
// call with id.
func (c *callsSeen) called(i int, id string) bool {
	if c.set == nil && c.scans < 8 {
		c.scans++
		for j := i - 1; j >= c.from; j-- {
			if m := &c.msgs[j]; m.Role == session.RoleAssistant && m.replayed() {
				for _, call := range m.Calls {
					if call.ID == id {
						return true
					}
				}
			}
		}
		return false
	}
	if c.set == nil {
		c.set, c.to = map[string]bool{}, c.from
	}
	for ; c.to < i; c.to++ {
		if m := &c.msgs[c.to]; m.Role == session.RoleAssistant && m.replayed() {
			for _, call := range m.Calls {
				c.set[call.ID] = true
			}
		}
	}
	return c.set[id]
}

// answersAfter reports whether, from index i, a toolResult answering one
// of calls comes before any message other than a toolResult or a keyed
// (movable) message; undecided when it reached the end of msgs without
// either (a longer list may answer otherwise).
func answersAfter(msgs []PairMessage, i int, calls map[string]bool) (found, undecided bool) {
	for ; i < len(msgs); i++ {
		m := &msgs[i]
		switch {
		case m.Role == session.RoleToolResult:
			if calls[m.CallID] {
				return true, false
			}
		case m.Role == session.RoleAssistant:
			return false, false
		case !closesCalls(m.Role):
		case m.Key == nil:
			return false, false
		}
	}
	return false, true
}

// occurrences returns the occurrence of each toolResult msgs[idx[k]]
// (idx ascending): its 1-based rank among the toolResult messages with
// the same toolCallId from index from on (result keys rank among the
// messages start_at keeps). Only results of those call ids are counted.
func occurrences(msgs []PairMessage, from int, idx []int) []int {
	if len(idx) == 0 {
		return nil
	}
	out := make([]int, len(idx))
	calls := make(map[string]int, len(idx))
	for _, i := range idx {
		calls[msgs[i].CallID] = 0
	}
	k := 0
	for j := from; k < len(idx); j++ {
		if msgs[j].Role != session.RoleToolResult {
			continue
		}
		n, ok := calls[msgs[j].CallID]
		if !ok {
			continue
		}
		calls[msgs[j].CallID] = n + 1
		for k < len(idx) && idx[k] == j {
			out[k] = n + 1
			k++
		}
	}
	return out
}

// moveOccurrences returns the occurrence of the After message of each of
// moves that is a toolResult (0 for the others).
func moveOccurrences(msgs []PairMessage, from int, moves []PairMove) []int {
	if len(moves) == 0 {
		return nil
	}
	out := make([]int, len(moves))
	for k, mv := range moves {
		if mv.After >= 0 && msgs[mv.After].Role == session.RoleToolResult {
			out[k] = occurrences(msgs, from, []int{mv.After})[0]
		}
	}
	return out
}

// callSet is the set of the ids of calls.
func callSet(calls []PairCall) map[string]bool {
	s := make(map[string]bool, len(calls))
	for _, c := range calls {
		s[c.ID] = true
	}
	return s
}

// NewContextTool is the name of the tool that requests a rollover; its own
// call is answered by the tool phase and never blocks a rollover.
const NewContextTool = "new_context"

// UnresolvedCall is a tool call of the leaf's open batch without a result.
type UnresolvedCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// UnresolvedCalls returns the calls of the leaf's open tool batch that
// have no result yet: the calls of the last assistant message of msgs when
// it is replayed (stopReason neither error nor aborted) and only tool
// results (or system messages) follow it. Once any other message follows
// (a user message, a boundary, another assistant, including the aborted
// one Pi writes when ctx.abort() stops the run) pi-ai answers the open
// calls synthetically and none is unresolved. Calls named new_context are
// left out.
func UnresolvedCalls(msgs []PairMessage) []UnresolvedCall {
	k := len(msgs) - 1
	for ; k >= 0; k-- {
		if msgs[k].Role == session.RoleAssistant {
			break
		}
		if closesCalls(msgs[k].Role) {
			return nil
		}
	}
	if k < 0 || !msgs[k].replayed() {
		return nil
	}
	done := map[string]bool{}
	for _, m := range msgs[k+1:] {
		if m.Role == session.RoleToolResult {
			done[m.CallID] = true
		}
	}
	var out []UnresolvedCall
	for _, c := range msgs[k].Calls {
		if !done[c.ID] && c.Name != NewContextTool {
			out = append(out, UnresolvedCall(c))
		}
	}
	return out
}

// openCallsError is the EOpenToolCalls of a rollover step refused while the
// leaf's batch has calls without results (docs/modes.md "Tool-call pairing": a rollover never cuts
// a call from its result).
func openCallsError(what, leaf string, calls []UnresolvedCall) error {
	parts := make([]string, len(calls))
	for i, c := range calls {
		parts[i] = c.ID
		if c.Name != "" {
			parts[i] += " (" + c.Name + ")"
		}
	}
	return contextd.Errorf(contextd.EOpenToolCalls, "%s refused: tool calls %s on leaf %q have no result yet; retry once Pi has written their results (a rollover never separates a call from its result)",
		what, strings.Join(parts, ", "), leaf)
}

// leafUnresolved is UnresolvedCalls of b's provider context, and whether
// the open batch holds a new_context call.
func leafUnresolved(b *Branch) ([]UnresolvedCall, bool, error) {
	rules := session.NewestRules
	if b.Target != nil {
		rules = b.Target.Rules()
	}
	msgs, _, err := pairMessages(b, rules, nil, "", true)
	if err != nil {
		return nil, false, err
	}
	open := UnresolvedCalls(msgs)
	viaNewContext := false
	if len(open) > 0 {
		for k := len(msgs) - 1; k >= 0; k-- {
			if msgs[k].Role == session.RoleAssistant {
				for _, c := range msgs[k].Calls {
					viaNewContext = viaNewContext || c.Name == NewContextTool
				}
				break
			}
		}
	}
	return open, viaNewContext, nil
}
