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

// rolloverBatch returns the calls other than new_context of the last
// assistant message on b, at or after the entry from (the closing
// window's boundary), that called new_context, in call order, with their
// results on b. None when no such message is on b.
func rolloverBatch(b *Branch, from string) ([]BatchCall, error) {
	rules := session.NewestRules
	if b.Target != nil {
		rules = b.Target.Rules()
	}
	msgs, _, err := pairMessages(b, rules, nil, from, false)
	if err != nil {
		return nil, err
	}
	k := -1
	for i := len(msgs) - 1; i >= 0 && k < 0; i-- {
		if msgs[i].Role != session.RoleAssistant {
			continue
		}
		for _, c := range msgs[i].Calls {
			if c.Name == NewContextTool {
				k = i
				break
			}
		}
	}
	if k < 0 {
		return nil, nil
	}
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
	return out, nil
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
