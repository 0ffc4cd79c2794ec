package notes

import (
	"testing"
	"time"

	"contextd"
)

// A note entry written to the session file without contextd (by hand, or
// by a tool playing the extension's write side) may hold a lone surrogate
// escape, which Pi's JSON.parse keeps. The note state keeps it too (WTF-8:
// `\udc00` is the bytes ED B0 80), and every answer that would carry it
// refuses with MsgFileLoneSurrogate (the 422 of a write holding one,
// MsgTextLoneSurrogate, read the other way) instead of U+FFFD.
func TestLoneSurrogateFromTheFile(t *testing.T) {
	// Line 2 is "b\udc00c": the surrogate is its character 2.
	ev, err := DecodeEvent("n1", CustomTypeNote, []byte(`{"protocol":1,"action":"write","path":"/root/notes/plan.md","text":"a\nb\udc00c\nd\ud83d\ude00","timestamp":1783342028114}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "a\nb\xed\xb0\x80c\nd😀"; ev.Text != want {
		t.Fatalf("decoded text %q, want %q (the lone surrogate kept in WTF-8, the pair as U+1F600)", ev.Text, want)
	}
	snap, err := DecodeEvent("s1", CustomTypeNoteSnapshot, []byte(`{"protocol":1,"timestamp":1783342028114,"files":[{"path":"/root/notes/x.md","text":"\ud800","createdAt":1,"updatedAt":2}]}`))
	if err != nil || snap.Files[0].Text != "\xed\xa0\x80" {
		t.Fatalf("snapshot files %+v %v, want the lone surrogate kept", snap.Files, err)
	}
	s := testState(t, ev)
	const refusal = "Note /root/notes/plan.md holds a lone surrogate \\udc00 at line 2, character 2 (half of a UTF-16 pair, which a note cannot hold; it was written to the session file without contextd); rewrite the file with write_file"

	_, err = ReadFile(s, "/root", ReadFileArgs{Path: "plan.md"})
	asError(t, err, contextd.EInvalid, refusal)
	_, err = ReadFile(s, "/root", ReadFileArgs{Path: "plan.md", StartLine: ptr(2), StopLine: ptr(2)})
	asError(t, err, contextd.EInvalid, refusal)
	// Lines without it are answered as they are.
	r, err := ReadFile(s, "/root", ReadFileArgs{Path: "plan.md", StartLine: ptr(3)})
	if err != nil || r.File.Content != "d😀" {
		t.Fatalf("line 3: %+v %v, want d😀", r.File, err)
	}
	_, err = SearchContents(s, "/root", SearchArgs{Query: "c"})
	asError(t, err, contextd.EInvalid, refusal)
	sr, err := SearchContents(s, "/root", SearchArgs{Query: "a"})
	if err != nil || len(sr.Files) != 1 || sr.Files[0].Matches[0].Line != "a" {
		t.Fatalf("search a: %+v %v, want line 1", sr, err)
	}
	_, err = Snapshot(s, time.UnixMilli(t0))
	asError(t, err, contextd.EInvalid, refusal)
	// Rewritten with write_file, the file reads again.
	s2 := testState(t, ev, w("/root/notes/plan.md", "b", t0+1))
	if _, err := Snapshot(s2, time.UnixMilli(t0+2)); err != nil {
		t.Fatal(err)
	}
}
