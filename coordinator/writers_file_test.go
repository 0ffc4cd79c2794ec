package coordinator

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// treeLines is a session file of entries with the parents given: each
// entry is {id, parent ("" = root), body}; header false leaves out the
// session header (lines to append).
func treeLines(sessionID string, header bool, entries ...[3]string) []byte {
	var b strings.Builder
	if header {
		b.WriteString(`{"type":"session","version":3,"id":"` + sessionID + `","timestamp":"2026-08-01T10:00:00.000Z","cwd":"/tmp/hand"}` + "\n")
	}
	for _, e := range entries {
		parent := "null"
		if e[1] != "" {
			parent = `"` + e[1] + `"`
		}
		b.WriteString(`{` + e[2] + `,"id":"` + e[0] + `","parentId":` + parent + `,"timestamp":"2026-08-01T10:00:00.000Z"}` + "\n")
	}
	return []byte(b.String())
}

// TestConcurrentWritersFromFile: with no registration at all, a file whose
// runs overlap (two Pis continued h2; Pi A's answer a2, line 6, has its
// prompt a1 as parent while Pi B's prompt b1 was appended between them,
// and Pi B's answer b2, line 7, has b1 as parent) carries one
// concurrent_writers problem naming the latest such entry, b2, in GET
// /v1/sessions/{id} and /context. Navigation does not: a user message
// continuing an earlier entry (/tree, then a prompt) is one Pi. After
// interleaveRecent entries written by one Pi alone the file is settled.
func TestConcurrentWritersFromFile(t *testing.T) {
	const answer = `"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"stopReason":"stop","timestamp":1785578400000}`
	forked := [][3]string{
		{"h1", "", hUser("start")},
		{"h2", "h1", answer},
		{"a1", "h2", hUser("pi A asks")},
		{"b1", "h2", hUser("pi B asks")},
		{"a2", "a1", hAssistant(hCall("ca", "bash"))}, // line 6: Pi A's run, after Pi B's prompt
		{"b2", "b1", hAssistant(hCall("cb", "bash"))}, // line 7: Pi B's run, after Pi A's answer
	}
	navigated := [][3]string{
		{"h1", "", hUser("start")},
		{"h2", "h1", answer},
		{"h3", "h2", hUser("one way")},
		{"h4", "h3", answer},
		{"n1", "h2", hUser("another way, after /tree")},
		{"n2", "n1", hAssistant(hCall("cn", "bash"))},
		{"n3", "n2", hResult("cn", "bash", "out")},
	}
	svc, dir := localService(t, map[string][]byte{"forked.jsonl": treeLines("forked", true, forked...), "navigated.jsonl": treeLines("navigated", true, navigated...)})
	ctx := t.Context()
	problems := func(sid string) []SessionProblem {
		t.Helper()
		st, err := svc.SessionStateOf(ctx, sid)
		if err != nil {
			t.Fatal(err)
		}
		c, err := svc.Context(ctx, sid, ContextRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var a, b []SessionProblem
		for _, p := range st.Problems {
			if p.Reason == "concurrent_writers" {
				a = append(a, p)
			}
		}
		for _, p := range c.Problems {
			if p.Reason == "concurrent_writers" {
				b = append(b, p)
			}
		}
		if !slices.Equal(a, b) {
			t.Errorf("%s: GET problems %+v, /context %+v: want the same", sid, a, b)
		}
		return a
	}
	want := []SessionProblem{{Reason: "concurrent_writers", Line: 7, Detail: "two Pi processes appended to this session at the same time (entry b2, line 7, continues an earlier entry, not the one before it): " +
		"each sees only its own branch, so windows and notes written in one are not in the other; " +
		"close all but one Pi on this session (or continue in a copy with /fork), and find the other's work with /tree"}}
	if p := problems("forked"); !slices.Equal(p, want) {
		t.Errorf("forked: %+v\nwant %+v", p, want)
	}
	if p := problems("navigated"); len(p) != 0 {
		t.Errorf("navigated: %+v, want none", p)
	}
	// Pi B alone goes on: with 199 more entries b2 is the 200th from the
	// end and still reported; one more settles the file.
	f, err := os.OpenFile(filepath.Join(dir, "forked.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	parent := "b2"
	alone := func(n int) {
		t.Helper()
		for range n {
			id := "x" + parent
			if _, err := f.Write(treeLines("forked", false, [3]string{id, parent, hUser("alone")})); err != nil {
				t.Fatal(err)
			}
			parent = id
		}
	}
	alone(interleaveRecent - 1)
	if p := problems("forked"); !slices.Equal(p, want) {
		t.Errorf("%d entries after b2: %+v, want it still", interleaveRecent-1, p)
	}
	alone(1)
	if p := problems("forked"); len(p) != 0 {
		t.Errorf("%d entries after b2: %+v, want none", interleaveRecent, p)
	}
}
