package notes

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestDecodeEvent(t *testing.T) {
	ev, err := DecodeEvent("244df0e2", CustomTypeNote, []byte(`{"protocol":1,"action":"write","path":"/root/notes/plan.md","text":"# Plan\n","timestamp":1783342028114,"extra":true}`))
	if err != nil || ev.EntryID != "244df0e2" || ev.Action != ActionWrite || ev.Path != "/root/notes/plan.md" || ev.Text != "# Plan\n" || ev.Timestamp != t0 {
		t.Fatalf("%+v %v", ev, err)
	}
	ev, err = DecodeEvent("a", CustomTypeNote, []byte(`{"protocol":1,"action":"append","path":"/root/worker/notes/x","text":"","timestamp":1.783342028114e12}`))
	if err != nil || ev.Action != ActionAppend || ev.Text != "" || ev.Timestamp != t0 {
		t.Fatalf("%+v %v", ev, err)
	}
	ev, err = DecodeEvent("s", CustomTypeNoteSnapshot, []byte(`{"protocol":1,"timestamp":5,"files":[{"path":"/root/notes/b","text":"b","createdAt":1,"updatedAt":2},{"path":"/root/notes/a","text":"","createdAt":0,"updatedAt":0}]}`))
	if err != nil || ev.Action != ActionSnapshot || ev.Timestamp != 5 || len(ev.Files) != 2 || ev.Files[0] != (SnapshotFile{"/root/notes/b", "b", 1, 2}) {
		t.Fatalf("%+v %v", ev, err)
	}
	ev, err = DecodeEvent("s", CustomTypeNoteSnapshot, []byte(`{"protocol":1,"timestamp":5,"files":[]}`))
	if err != nil || ev.Files == nil || len(ev.Files) != 0 {
		t.Fatalf("empty snapshot: %+v %v", ev, err)
	}

	big := `"` + strings.Repeat("x", MaxFileBytes+1) + `"`
	bad := []struct{ customType, data string }{
		{CustomTypeNote, ``},
		{CustomTypeNote, `null`},
		{CustomTypeNote, `[]`},
		{CustomTypeNote, `"x"`},
		{CustomTypeNote, `{`},
		{CustomTypeNote, `{"action":"write","path":"/root/notes/a","text":"","timestamp":1}`},
		{CustomTypeNote, `{"protocol":2,"action":"write","path":"/root/notes/a","text":"","timestamp":1}`},
		{CustomTypeNote, `{"protocol":"1","action":"write","path":"/root/notes/a","text":"","timestamp":1}`},
		{CustomTypeNote, `{"protocol":1,"action":"delete","path":"/root/notes/a","text":"","timestamp":1}`},
		{CustomTypeNote, `{"protocol":1,"path":"/root/notes/a","text":"","timestamp":1}`},
		{CustomTypeNote, `{"protocol":1,"action":"write","path":"a","text":"","timestamp":1}`},
		{CustomTypeNote, `{"protocol":1,"action":"write","path":"/root/notes/../a","text":"","timestamp":1}`},
		{CustomTypeNote, `{"protocol":1,"action":"write","path":"/root/notes","text":"","timestamp":1}`},
		{CustomTypeNote, `{"protocol":1,"action":"write","text":"","timestamp":1}`},
		{CustomTypeNote, `{"protocol":1,"action":"write","path":"/root/notes/a","timestamp":1}`},
		{CustomTypeNote, `{"protocol":1,"action":"write","path":"/root/notes/a","text":null,"timestamp":1}`},
		{CustomTypeNote, `{"protocol":1,"action":"write","path":"/root/notes/a","text":5,"timestamp":1}`},
		{CustomTypeNote, `{"protocol":1,"action":"write","path":"/root/notes/a","text":""}`},
		{CustomTypeNote, `{"protocol":1,"action":"write","path":"/root/notes/a","text":"","timestamp":-1}`},
		{CustomTypeNote, `{"protocol":1,"action":"write","path":"/root/notes/a","text":"","timestamp":1.5}`},
		{CustomTypeNote, `{"protocol":1,"action":"write","path":"/root/notes/a","text":"","timestamp":253402300800000}`},
		{CustomTypeNote, `{"protocol":1,"action":"write","path":"/root/notes/a","text":"","timestamp":"2026-07-06T12:47:08.114Z"}`},
		{CustomTypeNote, `{"protocol":1,"action":"write","path":"/root/notes/a","text":` + big + `,"timestamp":1}`},
		{CustomTypeNoteSnapshot, `{"protocol":1,"timestamp":1}`},
		{CustomTypeNoteSnapshot, `{"protocol":1,"timestamp":1,"files":null}`},
		{CustomTypeNoteSnapshot, `{"protocol":1,"files":[]}`},
		{CustomTypeNoteSnapshot, `{"timestamp":1,"files":[]}`},
		{CustomTypeNoteSnapshot, `{"protocol":1,"timestamp":1,"files":{}}`},
		{CustomTypeNoteSnapshot, `{"protocol":1,"timestamp":1,"files":[{"path":"x","text":"","createdAt":1,"updatedAt":1}]}`},
		{CustomTypeNoteSnapshot, `{"protocol":1,"timestamp":1,"files":[{"text":"","createdAt":1,"updatedAt":1}]}`},
		{CustomTypeNoteSnapshot, `{"protocol":1,"timestamp":1,"files":[{"path":"/root/notes/a","createdAt":1,"updatedAt":1}]}`},
		{CustomTypeNoteSnapshot, `{"protocol":1,"timestamp":1,"files":[{"path":"/root/notes/a","text":"","updatedAt":1}]}`},
		{CustomTypeNoteSnapshot, `{"protocol":1,"timestamp":1,"files":[{"path":"/root/notes/a","text":"","createdAt":1}]}`},
		{CustomTypeNoteSnapshot, `{"protocol":1,"timestamp":1,"files":[{"path":"/root/notes/a","text":"","createdAt":1,"updatedAt":1},{"path":"/root/notes/a","text":"","createdAt":1,"updatedAt":1}]}`},
		{CustomTypeNoteSnapshot, `{"protocol":1,"timestamp":1,"files":[{"path":"/root/notes/a","text":` + big + `,"createdAt":1,"updatedAt":1}]}`},
		{"codex-context-window", `{"protocol":1,"action":"write","path":"/root/notes/a","text":"","timestamp":1}`},
		{"", `{}`},
	}
	for _, b := range bad {
		_, err := DecodeEvent("id1", b.customType, []byte(b.data))
		if !errors.Is(err, ErrMalformedEvent) || !strings.Contains(err.Error(), `"id1"`) {
			d := b.data
			if len(d) > 120 {
				d = d[:120]
			}
			t.Errorf("DecodeEvent(%s, %s) = %v, want ErrMalformedEvent", b.customType, d, err)
		}
	}
}

func TestReplaySemantics(t *testing.T) {
	snap := Event{EntryID: "s", Action: ActionSnapshot, Timestamp: t0 + 50, Files: []SnapshotFile{
		{Path: "/root/notes/a", Text: "from snapshot", CreatedAt: 3, UpdatedAt: 4},
	}}
	s := Replay([]Event{
		{EntryID: "1", Action: ActionAppend, Path: "/root/notes/a", Text: "x", Timestamp: t0},       // creates
		{EntryID: "2", Action: ActionAppend, Path: "/root/notes/a", Text: "\ny", Timestamp: t0 + 1}, // appends exactly
		{EntryID: "3", Action: ActionWrite, Path: "/root/notes/b", Text: "b", Timestamp: t0 + 2},
		snap, // replaces everything: b is gone
		{EntryID: "4", Action: ActionWrite, Path: "/root/notes/a", Text: "w", Timestamp: t0 + 60}, // keeps createdAt
		{EntryID: "5", Action: "delete", Path: "/root/notes/a", Timestamp: t0 + 70},
		{EntryID: "6", Action: ActionWrite, Path: "a", Timestamp: t0 + 70},
		{EntryID: "7", Action: ActionWrite, Path: "/root/notes/c", Timestamp: -1},
		{EntryID: "8", Action: ActionSnapshot, Timestamp: t0, Files: []SnapshotFile{{Path: "bad", CreatedAt: 1, UpdatedAt: 1}}},
	})
	files := s.Files()
	if len(files) != 1 || files[0] != (File{Path: "/root/notes/a", Text: "w", CreatedAt: 3, UpdatedAt: t0 + 60}) {
		t.Fatalf("files = %+v", files)
	}
	var skipped []string
	for _, sk := range s.Skipped {
		skipped = append(skipped, sk.EntryID)
	}
	if strings.Join(skipped, ",") != "5,6,7,8" {
		t.Fatalf("skipped = %v", s.Skipped)
	}
	before := Replay([]Event{{EntryID: "1", Action: ActionAppend, Path: "/root/notes/a", Text: "x", Timestamp: t0}, {EntryID: "2", Action: ActionAppend, Path: "/root/notes/a", Text: "\ny", Timestamp: t0 + 1}})
	if f, _ := before.File("/root/notes/a"); f != (File{"/root/notes/a", "x\ny", t0, t0 + 1}) {
		t.Fatalf("append: %+v", f)
	}
	// Nil and zero states are empty.
	var ns *State
	if ns.Len() != 0 || len(ns.Files()) != 0 || ThreadHint(ns, nil) != "" {
		t.Fatal("nil state not empty")
	}
	if _, ok := ns.File("/root/notes/a"); ok {
		t.Fatal("nil state has a file")
	}
	var zs State
	if err := zs.Apply(Event{Action: ActionWrite, Path: "/root/notes/z", Text: "z", Timestamp: 1}); err != nil || zs.Len() != 1 {
		t.Fatal(err)
	}
}

// jsonStringLen agrees with encoding/json (HTML escaping off) on random
// strings, valid UTF-8 or not.
func TestJSONStringLen(t *testing.T) {
	alphabet := []string{"a", "é", "€", "𝄞", "\"", "\\", "\n", "\r", "\t", "\b", "\f", "\x00", "\x1f", "\x7f", "<", ">", "&", "\u2028", "\u2029", "\xff", "\xc3", "\ufffd", "\u0085"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		var b strings.Builder
		for range r.IntN(12) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		s := b.String()
		if got, want := jsonStringLen(s), len(compactJSON(s)); got != want {
			t.Fatalf("jsonStringLen(%q) = %d, want %d (valid UTF-8: %v)", s, got, want, utf8.ValidString(s))
		}
	}
}
