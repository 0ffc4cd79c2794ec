package session

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// TestTreeOnlyParsesTheSameEntries: Parser.TreeOnly (the store's first
// phase) yields, line by line, the same Entry and the same skip reason as a
// full parse, bodies with escapes, control characters and bad escapes
// included: the bodies it does not decode are still validated.
func TestTreeOnlyParsesTheSameEntries(t *testing.T) {
	lines := []string{
		`{"type":"session","version":3,"id":"hdr-1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}`,
		`{"type":"message","id":"a1","parentId":null,"timestamp":"t1","message":{"role":"user","content":"line\none \u00e9","timestamp":2}}`,
		`{"type":"message","id":"a2","parentId":"a1","timestamp":"t2","message":{"role":"assistant","content":[{"type":"thinking","thinking":"x","thinkingSignature":"s"},{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"/x"}}],"stopReason":"toolUse"}}`,
		`{"type":"message","id":"a3","parentId":"a2","timestamp":"t3","message":{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"ok"}],"isError":false}}`,
		`{"type":"message","id":"a4","parentId":"a3","timestamp":"t4","message":{"role":"bashExecution","command":"ls","output":"a\tb","exitCode":0}}`,
		// A raw control character in a body: JSON.parse throws, both skip it.
		"{\"type\":\"message\",\"id\":\"a5\",\"parentId\":\"a4\",\"message\":{\"role\":\"user\",\"content\":\"bad\x01\"}}",
		// A bad escape in a body.
		`{"type":"message","id":"a6","parentId":"a4","message":{"role":"user","content":"bad \q"}}`,
		`{"type":"message","id":"a7","parentId":"a4","message":{"role":"user","content":[{"type":"text","text":"unterminated}]}}`,
		`{"type":"custom_message","id":"a8","parentId":"a4","timestamp":"t8","customType":"codex-context-window","content":"boundary","display":false,"details":{"id":"m1","contextManagement":{"kind":"window","firstWindowId":"w1","currentWindowId":"w2","previousWindowId":"w1","windowNumber":2,"agentName":"main"}}}`,
		`{"type":"branch_summary","id":"a9","parentId":"a8","timestamp":"t9","fromId":"a4","summary":"the \"summary\""}`,
		`{"type":"branch_summary","id":"a10","parentId":"a9","timestamp":"t10","fromId":"a4","summary":""}`,
		`{"type":"branch_summary","id":"a11","parentId":"a10","timestamp":"t11","fromId":"a4","summary":null}`,
		`{"type":"compaction","id":"a12","parentId":"a11","timestamp":"t12","summary":"s","firstKeptEntryId":"a8","tokensBefore":5,"systemMessage":true}`,
		`{"type":"context_edit","id":"a13","parentId":"a12","timestamp":"t13","targetId":"a3","replacement":{"content":"short"}}`,
		`{"type":"context_edit","id":"a14","parentId":"a13","timestamp":"t14","targetId":"a2","replacement":null}`,
		`{"type":"custom","id":"a15","parentId":"a14","timestamp":"t15","customType":"codex-context-note","data":{"text":"n"}}`,
		`{"type":"label","id":"a16","parentId":"a15","timestamp":"t16","targetId":"a3","label":"l"}`,
		`{"type":"message","id":"a17","parentId":"a16","message":{"role":"user","content":"x"}} {"type":"x"}`,
		`[1,2]`,
		``,
	}
	full, tree := Parser{}, Parser{TreeOnly: true}
	var scratch StringChunks
	tree.Scratch = &scratch
	n := 0
	for i, l := range lines {
		e1, _, s1 := full.ParseLine([]byte(l), int64(i*100))
		e2, _, s2 := tree.ParseLine([]byte(l), int64(i*100))
		if s1 != s2 || (e1 == nil) != (e2 == nil) {
			t.Fatalf("line %d: full parse %v %v, tree-only %v %v", i+1, e1, s1, e2, s2)
		}
		if e1 != nil && !reflect.DeepEqual(*e1, *e2) {
			t.Errorf("line %d: full entry %+v, tree-only %+v", i+1, *e1, *e2)
		}
		if e1 != nil {
			n++
		}
	}
	// Entries a1-a4 and a8-a16 (13); a5-a7 and a17 are invalid JSON.
	if n != 13 {
		t.Errorf("%d entries, want 13", n)
	}
	if !reflect.DeepEqual(full.Header, tree.Header) || full.NextSeq != 13 || tree.NextSeq != 13 {
		t.Errorf("headers %+v / %+v, next seq %d / %d", full.Header, tree.Header, full.NextSeq, tree.NextSeq)
	}
}

// TestTreeOnlyDepthLimit: values nested around the decoder's depth limit
// (10,000) inside a message's content parts, a non-array content and a
// custom message's content are accepted or skipped alike by both parses.
func TestTreeOnlyDepthLimit(t *testing.T) {
	hdr := `{"type":"session","version":3,"id":"h","timestamp":"t","cwd":"/"}`
	agree := 0
	for n := maxDepth - 4; n <= maxDepth+4; n++ {
		deep := strings.Repeat("[", n) + strings.Repeat("]", n)
		for _, l := range []string{
			`{"type":"message","id":"a","message":{"role":"user","content":[{"type":"text","text":"x","extra":` + deep + `}]}}`,
			`{"type":"message","id":"a","message":{"role":"user","content":[` + deep + `]}}`,
			`{"type":"message","id":"a","message":{"role":"user","content":{"x":` + deep + `}}}`,
			`{"type":"custom_message","id":"a","customType":"c","content":[{"type":"text","extra":` + deep + `}]}`,
		} {
			full, tree := Parser{}, Parser{TreeOnly: true}
			full.ParseLine([]byte(hdr), 0)
			tree.ParseLine([]byte(hdr), 0)
			e1, _, s1 := full.ParseLine([]byte(l), 100)
			e2, _, s2 := tree.ParseLine([]byte(l), 100)
			if s1 != s2 || (e1 == nil) != (e2 == nil) {
				t.Errorf("nesting %d, line %.80s...: full %v, tree-only %v", n, l, s1, s2)
			}
			if s1 == SkipNone {
				agree++
			}
		}
	}
	// Both limits are crossed: some lines are kept, some skipped.
	if agree == 0 || agree == 36 {
		t.Errorf("%d of 36 lines kept: the nesting range does not cross the limit", agree)
	}
}

// FuzzTreeOnlyAgrees: for any line after a v3 header, Parser.TreeOnly
// gives the same skip reason and the same Entry as a full parse.
func FuzzTreeOnlyAgrees(f *testing.F) {
	for _, s := range []string{
		`{"type":"message","id":"a","message":{"role":"user","content":"hi"}}`,
		`{"type":"message","id":"a","message":{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"history","arguments":{"action":"list_items"}}],"stopReason":"toolUse"}}`,
		`{"type":"message","id":"a","message":{"role":"bashExecution","command":"ls","output":"x\u0000"}}`,
		`{"type":"branch_summary","id":"b","fromId":"a","summary":"\u0041"}`,
		`{"type":"custom_message","id":"w","customType":"codex-context-window","content":[{"type":"text","text":"t"}],"details":{"contextManagement":{"kind":"window"}}}`,
		`{"type":"context_edit","id":"e","targetId":"a","replacement":{"content":[{"type":"text","text":"t"}]}}`,
		`{"type":"message","id":"a","message":{"role":"user","content":"bad \x"}}`,
	} {
		f.Add([]byte(s))
	}
	hdr := []byte(`{"type":"session","version":3,"id":"s"}`)
	f.Fuzz(func(t *testing.T, line []byte) {
		if bytes.IndexByte(line, '\n') >= 0 {
			return
		}
		full, tree := Parser{}, Parser{TreeOnly: true}
		full.ParseLine(hdr, 0)
		tree.ParseLine(hdr, 0)
		e1, _, s1 := full.ParseLine(line, 0)
		e2, _, s2 := tree.ParseLine(line, 0)
		if s1 != s2 || !reflect.DeepEqual(e1, e2) {
			t.Fatalf("full parse %v %+v, tree-only %v %+v", s1, e1, s2, e2)
		}
	})
}
