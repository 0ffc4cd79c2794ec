package notes

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// The example of reference codex-history-notes.md §3.5, byte for byte.
func TestThreadHintReferenceExample(t *testing.T) {
	s := testState(t, w("/root/notes/checkpoint.md", "progress", t0))
	got := ThreadHint(s, &Recovery{WindowID: "window-0", UserItemIDs: []string{"user-entry"}})
	want := "Recent notes (up to 5, most-recent first):\n- /root/notes/checkpoint.md (1 line, 8 UTF-8 bytes)\nPrevious window history IDs: {\"window_id\":\"window-0\",\"user_item_ids\":[\"user-entry\"]}"
	if got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

// The fixture format of reference §1.6: "(2 lines, 14 UTF-8 bytes)".
func TestThreadHintLinesAndOrder(t *testing.T) {
	s := testState(t,
		w("/root/notes/latest.md", "line one\nlast", t0+10), // 2 lines, 13 bytes
		w("/root/notes/empty.md", "", t0+5),
		w("/root/notes/nl.md", "a\n", t0+10), // same time as latest.md: path order
		w("/root/worker/notes/w.md", "w", t0+1),
		w("/root/notes/old1.md", "x", t0),
		w("/root/notes/old2.md", "x", t0-1),
	)
	got := ThreadHint(s, nil)
	want := "Recent notes (up to 5, most-recent first):\n" +
		"- /root/notes/latest.md (2 lines, 13 UTF-8 bytes)\n" +
		"- /root/notes/nl.md (2 lines, 2 UTF-8 bytes)\n" +
		"- /root/notes/empty.md (0 lines, 0 UTF-8 bytes)\n" +
		"- /root/worker/notes/w.md (1 line, 1 UTF-8 bytes)\n" +
		"- /root/notes/old1.md (1 line, 1 UTF-8 bytes)"
	if got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if ThreadHint(nil, nil) != "" || ThreadHint(s, &Recovery{}) != got {
		t.Fatal("empty recovery must add nothing")
	}
}

func TestThreadHintRecoveryOnly(t *testing.T) {
	got := ThreadHint(nil, &Recovery{WindowID: "w<1>", SummaryItemID: "sum", UserItemIDs: []string{"u7", "u6", "u5", "u4", "u3", "u2", "u1"}})
	want := `Previous window history IDs: {"window_id":"w<1>","summary_item_id":"sum","user_item_ids":["u7","u6","u5","u4","u3"]}`
	if got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

// With many long paths the hint stays within 4,000 bytes, keeps whole
// lines in most-recent-first order and never cuts a character.
func TestThreadHintByteCap(t *testing.T) {
	long := func(i int) string {
		// 1,012 bytes: "/root/notes/" + 1000 bytes of 2- and 3-byte characters.
		return "/root/notes/" + fmt.Sprint(i) + strings.Repeat("é", 497) + strings.Repeat("€", (1000-1-994)/3) + "x"
	}
	var evs []Event
	for i := range 8 {
		p := long(i)
		if len(p) > MaxPathBytes {
			t.Fatalf("path too long: %d", len(p))
		}
		evs = append(evs, w(p, "text\n", t0+int64(100-i)))
	}
	s := testState(t, evs...)
	rec := &Recovery{WindowID: "e636b0b7-d739-4a87-ad1c-80eb5320dfff", SummaryItemID: "13499824", UserItemIDs: []string{"873ba1dd", "4075226e", "2623e50c"}}
	got := ThreadHint(s, rec)
	if len(got) > MaxHintBytes || !utf8.ValidString(got) {
		t.Fatalf("hint is %d bytes, valid UTF-8 %v", len(got), utf8.ValidString(got))
	}
	lines := strings.Split(got, "\n")
	// Header + 3 lines of ~1,040 bytes + recovery fit; a fourth does not.
	if len(lines) != 5 || lines[0] != hintNotesHeader || !strings.HasPrefix(lines[4], hintRecoveryPrefix) {
		t.Fatalf("lines: %d %q", len(lines), lines[0])
	}
	for i := 1; i <= 3; i++ {
		want := fmt.Sprintf("- %s (2 lines, 5 UTF-8 bytes)", long(i-1))
		if lines[i] != want {
			t.Errorf("line %d = %.40q…", i, lines[i])
		}
	}
	// Exactly at the cap: a recovery line that leaves exactly room for
	// three note lines keeps them; one byte more drops the third.
	threeLines := len(hintNotesHeader)
	for i := range 3 {
		threeLines += 1 + len(fmt.Sprintf("- %s (2 lines, 5 UTF-8 bytes)", long(i)))
	}
	recLen := MaxHintBytes - threeLines - 1
	base := len(hintRecoveryPrefix + `{"window_id":""}`)
	exact := &Recovery{WindowID: strings.Repeat("w", recLen-base)}
	got = ThreadHint(s, exact)
	if len(got) != MaxHintBytes || strings.Count(got, "\n") != 4 {
		t.Fatalf("exact fit: %d bytes, %d lines", len(got), strings.Count(got, "\n")+1)
	}
	exact.WindowID += "w"
	got = ThreadHint(s, exact)
	if len(got) > MaxHintBytes || strings.Count(got, "\n") != 3 {
		t.Fatalf("one byte over: %d bytes, %d lines", len(got), strings.Count(got, "\n")+1)
	}
}

// A recovery line that alone is too long loses user IDs (oldest first),
// then the summary ID, then disappears; note lines still fit around it.
func TestThreadHintHugeRecovery(t *testing.T) {
	id := func(c string) string { return strings.Repeat(c, 900) }
	rec := &Recovery{WindowID: id("w"), SummaryItemID: id("s"), UserItemIDs: []string{id("a"), id("b"), id("c")}}
	got := ThreadHint(nil, rec)
	want := hintRecoveryPrefix + `{"window_id":"` + id("w") + `","summary_item_id":"` + id("s") + `","user_item_ids":["` + id("a") + `","` + id("b") + `"]}`
	if got != want {
		t.Fatalf("got %d bytes, want %d", len(got), len(want))
	}
	got = ThreadHint(nil, &Recovery{WindowID: strings.Repeat("w", 3950), SummaryItemID: "s", UserItemIDs: []string{"u"}})
	if got != hintRecoveryPrefix+`{"window_id":"`+strings.Repeat("w", 3950)+`"}` {
		t.Fatalf("got %q", got[len(got)-40:])
	}
	s := testState(t, w("/root/notes/a.md", "a", t0))
	if got := ThreadHint(s, &Recovery{WindowID: strings.Repeat("w", 5000)}); got != "Recent notes (up to 5, most-recent first):\n- /root/notes/a.md (1 line, 1 UTF-8 bytes)" {
		t.Fatalf("got %q", got)
	}
	// A recovery line that fills the budget leaves no room for notes, and
	// the header never appears alone.
	full := &Recovery{WindowID: strings.Repeat("w", MaxHintBytes-len(hintRecoveryPrefix+`{"window_id":""}`))}
	if got := ThreadHint(s, full); len(got) != MaxHintBytes || strings.Contains(got, "Recent notes") {
		t.Fatalf("got %d bytes", len(got))
	}
}
