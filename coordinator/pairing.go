package coordinator

import (
	"fmt"
	"sort"
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
	p := PairPlan{Start: start}
	if start > 0 && start < len(msgs) && closesCalls(msgs[start].Role) {
		j := start - 1
		for j >= 0 && msgs[j].Role == session.RoleToolResult {
			j--
		}
		unanswered := map[string]bool{}
		if j >= 0 {
			unanswered = callSet(msgs[j].Calls)
			for _, r := range msgs[j+1 : start] {
				delete(unanswered, r.CallID)
			}
		}
		if j >= 0 && msgs[j].Role == session.RoleAssistant && msgs[j].replayed() && answersAfter(msgs, start+1, unanswered) {
			p.Start = j
			p.Problems = append(p.Problems, SessionProblem{Line: msgs[start].Line, Reason: "boundary_inside_tool_call",
				Detail: fmt.Sprintf("boundary %s is written between the calls of assistant %s and their results; the context starts at the assistant and the boundary follows the results", msgs[start].EntryID, msgs[j].EntryID)})
		}
	}
	open := map[string]bool{}     // calls of the last replayed assistant without a result yet
	answered := map[string]bool{} // calls that got a result (real, or pi-ai's synthetic one)
	var pending []int             // keyed messages to move after the results
	lastResult := -1
	flush := func() {
		after := lastResult
		for _, m := range pending {
			p.Moves = append(p.Moves, PairMove{Msg: m, After: after})
			after = m
		}
		pending, lastResult = nil, -1
	}
	closeOpen := func() {
		// Called for every message that closes calls: clearing keeps
		// the map (a new one each time cost 48 bytes a message).
		for id := range open {
			answered[id] = true
		}
		clear(open)
	}
	for i := p.Start; i < len(msgs); i++ {
		m := &msgs[i]
		switch {
		case m.Role == session.RoleAssistant:
			flush()
			closeOpen()
			if m.replayed() {
				for _, c := range m.Calls {
					open[c.ID] = true
				}
			}
		case m.Role == session.RoleToolResult:
			if open[m.CallID] {
				delete(open, m.CallID)
				answered[m.CallID] = true
				if len(pending) > 0 {
					lastResult = i
				}
				continue
			}
			reason, why := "orphaned_tool_result", "no call of a replayed assistant is open before it (its call is missing, in an errored or aborted assistant, before the slice, or already closed)"
			if answered[m.CallID] {
				reason, why = "duplicate_tool_result", "its call already has a result"
			}
			p.Drop = append(p.Drop, i)
			p.Problems = append(p.Problems, SessionProblem{Line: m.Line, Reason: reason,
				Detail: fmt.Sprintf("toolResult %s for call %s is not sent: %s", m.EntryID, m.CallID, why)})
		case !closesCalls(m.Role):
		default:
			if len(open) > 0 && m.Key != nil && answersAfter(msgs, i+1, open) {
				pending = append(pending, i)
				if i != start || p.Start == start {
					p.Problems = append(p.Problems, SessionProblem{Line: m.Line, Reason: "message_inside_tool_call",
						Detail: fmt.Sprintf("%s message %s is written between a call and its result; it is sent after the results", m.Role, m.EntryID)})
				}
				continue
			}
			flush()
			closeOpen()
		}
	}
	flush()
	sort.Ints(p.Drop)
	return p
}

// answersAfter reports whether, from index i, a toolResult answering one
// of calls comes before any message other than a toolResult or a keyed
// (movable) message.
func answersAfter(msgs []PairMessage, i int, calls map[string]bool) bool {
	for ; i < len(msgs); i++ {
		m := &msgs[i]
		switch {
		case m.Role == session.RoleToolResult:
			if calls[m.CallID] {
				return true
			}
		case m.Role == session.RoleAssistant:
			return false
		case !closesCalls(m.Role):
		case m.Key == nil:
			return false
		}
	}
	return false
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
