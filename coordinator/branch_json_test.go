package coordinator

import (
	"encoding/json"
	"testing"
)

// TestBranchAnswerJSON: the hand-written encoding equals encoding/json's on
// the same value (a type without the method), escapes included.
func TestBranchAnswerJSON(t *testing.T) {
	type plain BranchAnswer
	for _, a := range []BranchAnswer{
		{},
		{LeafID: "x", EntryIDs: []string{}, Context: []BranchEntry{}},
		{LeafID: "c", EntryIDs: []string{"a", "b", "v1-00000002", "é\"<\n"}, Cycle: true, Context: []BranchEntry{
			{EntryID: "a", Type: "message", Role: "user"},
			{EntryID: "b", Type: "custom_message", Role: "custom", CustomType: "codex-context-window"},
			{EntryID: "c", Type: "message", Role: "assistant", StopReason: "toolUse"},
			{EntryID: "\u2028&", Type: "x\x01", Role: ""},
		}},
		{LeafID: "d", Rules: "pi-1.6", EntryIDs: []string{"d"}, Context: []BranchEntry{
			{EntryID: "k", Type: "compaction", Role: "system"},
			{EntryID: "k", Type: "compaction", Role: "compactionSummary"},
			{EntryID: "a", Type: "message", Role: "assistant", StopReason: "stop", EditID: "e<1>"},
		}},
		{LeafID: "t", Rules: "pi-0.85", EntryIDs: []string{"s", "t"}, EntryCount: ptr(7), ContextCount: ptr(0), Context: []BranchEntry{}},
	} {
		got, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(plain(a))
		if string(got) != string(want) {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	}
}

func ptr(n int) *int { return &n }
