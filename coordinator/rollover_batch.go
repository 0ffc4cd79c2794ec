package coordinator

import (
	"strconv"
	"strings"

	"contextd/session"
)

// The other tool calls of the message that called new_context (docs/design.md
// docs/design.md §5.3.1 "After the whole batch"). A rollover is performed after every
// call of that message has its result in the session, so those results
// stay in the closing window; the next boundary names each of them, with
// the history item id of its result in the closed window, so that the
// model knows where their work went and can read it back with history
// read_item.

// BatchCall is one other tool call of the message that called
// new_context.
type BatchCall struct {
	Name     string // the tool's name
	CallID   string // the toolCall block's id
	ResultID string // entry id (history item id) of its toolResult; "" when it has none on the branch
}

// MaxBatchLines bounds the calls batchText names; the rest are counted.
const MaxBatchLines = 20

// rolloverBatch returns the calls other than new_context of the message
// that called new_context for this rollover, in call order, with their
// results on b: the last assistant message on b, at or after the entry
// from (the closing window's boundary), that called new_context, looked
// for no further back than the last assistant message at or before
// requestLeaf (the leaf when the rollover was requested: the message whose
// call asked for it, or, for a rollover a command asked for, one that
// called no new_context). None when no such message is on b.
//
// Only the messages from there on are decoded: decoding every assistant
// message of the window made the first commit of an 8 MiB one-window
// session take 40 ms (docs/benchmarks.md, "Rollover: the first commit").
// When requestLeaf is not on b the search goes back to from.
func rolloverBatch(b *Branch, from, requestLeaf string) ([]BatchCall, error) {
	rules := session.NewestRules
	if b.Target != nil {
		rules = b.Target.Rules()
	}
	tr := b.V.Tree
	cms := tr.Project(b.Seqs, rules)
	lo := 0
	if from != "" {
		lo = sliceStart(tr, cms, from)
	}
	lo = max(lo, requestStart(b, cms, requestLeaf))
	msgs, err := pairList(b, cms, lo, lo, len(cms))
	if err != nil {
		return nil, err
	}
	k := lastNewContextCall(msgs)
	if k < 0 {
		return nil, nil
	}
	return batchCalls(msgs, k), nil
}

// requestStart is the index in cms (b's projection) of the last assistant
// message at or before the entry requestLeaf on b; 0 when requestLeaf is
// not on b or no assistant message precedes it.
func requestStart(b *Branch, cms []session.ContextMessage, requestLeaf string) int {
	at := -1
	for i := len(b.Seqs) - 1; i >= 0; i-- {
		if b.V.Tree.ID(b.Seqs[i]) == requestLeaf {
			at = i
			break
		}
	}
	if at < 0 {
		return 0
	}
	after := make(map[int]bool, len(b.Seqs)-at-1)
	for _, sq := range b.Seqs[at+1:] {
		after[sq] = true
	}
	for i := len(cms) - 1; i >= 0; i-- {
		if cms[i].Role == session.RoleAssistant && !after[cms[i].Seq] {
			return i
		}
	}
	return 0
}

// lastNewContextCall is the index in msgs of the last assistant message
// that called new_context, or -1.
func lastNewContextCall(msgs []PairMessage) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != session.RoleAssistant {
			continue
		}
		for _, c := range msgs[i].Calls {
			if c.Name == NewContextTool {
				return i
			}
		}
	}
	return -1
}

// batchCalls is rolloverBatch's answer for the message msgs[k]: its calls
// other than new_context, each with the first result after it in msgs.
func batchCalls(msgs []PairMessage, k int) []BatchCall {
	results := map[string]string{}
	for _, m := range msgs[k+1:] {
		if m.Role == session.RoleToolResult {
			if _, ok := results[m.CallID]; !ok {
				results[m.CallID] = m.EntryID
			}
		}
	}
	var out []BatchCall
	for _, c := range msgs[k].Calls {
		if c.Name == NewContextTool {
			continue
		}
		out = append(out, BatchCall{Name: c.Name, CallID: c.ID, ResultID: results[c.ID]})
	}
	return out
}

// batchText is what the boundary says about calls (rolloverBatch) whose
// results are in the closed window closedID: "" when there are none, else
// a sentence and one line per call (at most MaxBatchLines), e.g.
//
//	The message that called new_context also called 2 other tools; their results are in the previous window (abc…), read them with history read_item if you need them:
//	- notes: item e0000005
//	- bash: no result
func batchText(calls []BatchCall, closedID string) string {
	if len(calls) == 0 {
		return ""
	}
	var b strings.Builder
	noun := "tools"
	if len(calls) == 1 {
		noun = "tool"
	}
	b.WriteString("The message that called new_context also called ")
	b.WriteString(strconv.Itoa(len(calls)))
	b.WriteString(" other " + noun + "; their results are in the previous window (" + closedID + "), read them with history read_item if you need them:")
	for i, c := range calls {
		if i == MaxBatchLines {
			b.WriteString("\n- and " + strconv.Itoa(len(calls)-i) + " more")
			break
		}
		name := c.Name
		if name == "" {
			name = "(unnamed tool)"
		}
		b.WriteString("\n- " + name + ": ")
		if c.ResultID == "" {
			b.WriteString("no result")
		} else {
			b.WriteString("item " + c.ResultID)
		}
	}
	return b.String()
}
