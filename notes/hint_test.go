package notes

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// The example of the seed's tests (docs/codex-contract.md "Local notes",
// thread hint), byte for byte.
func TestThreadHintReferenceExample(t *testing.T) {
	s := testState(t, w("/root/notes/checkpoint.md", "progress", t0))
	got := ThreadHint(s, &Recovery{WindowID: "window-0", UserItemIDs: []string{"user-entry"}})
	want := "Recent notes (up to 5, most-recent first):\n- /root/notes/checkpoint.md (1 line, 8 UTF-8 bytes)\nPrevious window history IDs: {\"window_id\":\"window-0\",\"user_item_ids\":[\"user-entry\"]}"
	if got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

// The fixture format of docs/codex-contract.md "Backend transport": "(2 lines, 14 UTF-8 bytes)".
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
	// Header + 3 lines of 1,038 bytes + the overflow line + recovery fit;
	// a fourth note line does not, and no left-out path (1,012 bytes) fits
	// in the 678 bytes left, so the overflow line counts them (docs/rollover-quality.md).
	if len(lines) != 6 || lines[0] != hintNotesHeader || lines[4] != "Left out by the 4000-byte hint cap: 2 notes" || !strings.HasPrefix(lines[5], hintRecoveryPrefix) {
		t.Fatalf("lines: %d %q", len(lines), lines[0])
	}
	for i := 1; i <= 3; i++ {
		want := fmt.Sprintf("- %s (2 lines, 5 UTF-8 bytes)", long(i-1))
		if lines[i] != want {
			t.Errorf("line %d = %.40q…", i, lines[i])
		}
	}
	// Exactly at the cap: with three recent notes, a recovery line that
	// leaves exactly room for their lines keeps them all, and no overflow
	// line; one byte more gives up the third note line for "1 note" (its
	// path line would be 36+1,012 bytes, more than the 1,037 freed).
	s3 := testState(t, evs[:3]...)
	threeLines := len(hintNotesHeader)
	for i := range 3 {
		threeLines += 1 + len(fmt.Sprintf("- %s (2 lines, 5 UTF-8 bytes)", long(i)))
	}
	recLen := MaxHintBytes - threeLines - 1
	base := len(hintRecoveryPrefix + `{"window_id":""}`)
	exact := &Recovery{WindowID: strings.Repeat("w", recLen-base)}
	got, rep := ThreadHintReport(s3, exact)
	if len(got) != MaxHintBytes || strings.Count(got, "\n") != 4 || rep.LeftOut != nil || strings.Contains(got, "Left out") {
		t.Fatalf("exact fit: %d bytes, %d lines, %+v", len(got), strings.Count(got, "\n")+1, rep.LeftOut)
	}
	exact.WindowID += "w"
	got, rep = ThreadHintReport(s3, exact)
	lines = strings.Split(got, "\n")
	if len(got) > MaxHintBytes || len(lines) != 5 || lines[3] != "Left out by the 4000-byte hint cap: 1 note" || !rep.Reported || len(rep.LeftOut) != 1 || rep.LeftOut[0] != long(2) {
		t.Fatalf("one byte over: %d bytes, %d lines, %+v", len(got), len(lines), rep)
	}
}

// TestThreadHintOverflowNames: the overflow line names left-out paths
// when they fit. Recovery line 3,850 bytes; note lines are 42 bytes
// ("- /root/notes/a.md (1 line, 1 UTF-8 bytes)"). Two note lines fit
// (3,850+42+2×43+1 = 3,979) but leave 20 bytes, too few for any overflow
// line; one note line leaves 63 bytes, exactly
// "Left out by the 4000-byte hint cap: /root/notes/b.md and 1 more".
func TestThreadHintOverflowNames(t *testing.T) {
	s := testState(t, w("/root/notes/a.md", "a", t0+3), w("/root/notes/b.md", "b", t0+2), w("/root/notes/c.md", "c", t0+1))
	base := len(hintRecoveryPrefix + `{"window_id":""}`)
	rec := &Recovery{WindowID: strings.Repeat("w", 3850-base)}
	got, rep := ThreadHintReport(s, rec)
	want := hintNotesHeader + "\n- /root/notes/a.md (1 line, 1 UTF-8 bytes)\nLeft out by the 4000-byte hint cap: /root/notes/b.md and 1 more\n" + recoveryLine(rec)
	if got != want {
		t.Fatalf("got %q", got[:200])
	}
	if !rep.Reported || !slices.Equal(rep.LeftOut, []string{"/root/notes/b.md", "/root/notes/c.md"}) || rep.Bytes != 4000 {
		t.Errorf("report = %+v", rep)
	}
	// Everything fits: no overflow line, nothing left out.
	got, rep = ThreadHintReport(s, nil)
	if strings.Contains(got, "Left out") || rep.LeftOut != nil || rep.Reported {
		t.Errorf("got %q %+v", got, rep)
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
