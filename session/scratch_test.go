package session

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestParseLineScratchKeepsEntryOwned: with Parser.Scratch, a copy of the
// Entry that ParseLine returns (the *Entry itself is reused for the next
// line) and the Header keep their values after the line's bytes are
// overwritten (the indexer reuses its read buffer), while the Decoded
// bodies carry the decoded text (escapes resolved) of this line in their
// bytes, their strings left empty.
func TestParseLineScratchKeepsEntryOwned(t *testing.T) {
	var scratch StringChunks
	p := Parser{Scratch: &scratch}
	lines := []string{
		`{"type":"session","version":3,"id":"hdr-1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w\/x"}`,
		`{"type":"label","id":"ab\u0063d001","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","targetId":"t\u0061rget","label":"l\"1"}`,
		`{"type":"message","id":"abcd0002","parentId":"abcd0001","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"user","content":"line\none","timestamp":2}}`,
	}
	var entries []Entry
	var texts []string
	for i, l := range lines {
		buf := []byte(l)
		e, d, skip := p.ParseLine(buf, int64(i*1000))
		if skip != SkipNone {
			t.Fatalf("line %d skipped: %v", i+1, skip)
		}
		if e != nil {
			entries = append(entries, *e)
			if d.Message != nil {
				if d.Message.Content.Text != "" {
					t.Errorf("line %d: string content %q as a string", i+1, d.Message.Content.Text)
				}
				texts = append(texts, string(d.Message.Content.TextBytes))
			}
		}
		copy(buf, bytes.Repeat([]byte("#"), len(buf))) // the indexer's buffer moves on
	}
	if len(texts) != 1 || texts[0] != "line\none" {
		t.Fatalf("decoded text %q, want [\"line\\none\"]", texts)
	}
	if h := p.Header; h.ID != "hdr-1" || h.Cwd != "/w/x" || h.Timestamp != "2026-01-01T00:00:00.000Z" {
		t.Errorf("header %+v", *h)
	}
	if e := &entries[0]; e.ID != "abcd001" || e.ParentID != "" || e.Type != TypeLabel || e.Timestamp != "2026-01-01T00:00:01.000Z" || e.TargetID() != "target" || e.Label() != `l"1` {
		t.Errorf("label entry %+v refs %+v", *e, *e.Refs)
	}
	if e := &entries[1]; e.ID != "abcd0002" || e.ParentID != "abcd0001" || e.Role != RoleUser || e.Timestamp != "2026-01-01T00:00:02.000Z" {
		t.Errorf("message entry %+v", *e)
	}
}

// TestParseLineScratchDecodesEachLineAlone: a parser with Scratch (whose
// Entry, Decoded, Message and content parts are reused from line to line)
// returns, for every line of the fixture sessions, the same Entry and
// Decoded as a parser without it (its text bodies, bytes, read as
// strings), compared before the next line is parsed; a line with fewer
// parts than the one before it gets only its own.
func TestParseLineScratchDecodesEachLineAlone(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "pi-*", "*.jsonl"))
	if len(files) < 5 {
		t.Fatalf("only %d fixture files", len(files))
	}
	extra := strings.Join([]string{
		`{"type":"session","version":3,"id":"hdr-1","timestamp":"t","cwd":"/w"}`,
		`{"type":"message","id":"a1","parentId":null,"message":{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"text","text":"b"},{"type":"toolCall","id":"c","name":"n","arguments":{}}],"stopReason":"toolUse"}}`,
		`{"type":"message","id":"a2","parentId":"a1","message":{"role":"toolResult","toolCallId":"c","content":[{"type":"text","text":"only"}]}}`,
		`{"type":"message","id":"a3","parentId":"a2","message":{"role":"user","content":[]}}`,
		`{"type":"custom_message","id":"a4","parentId":"a3","customType":"x","content":[{"type":"text","text":"m"}],"display":true}`,
		`{"type":"message","id":"a5","parentId":"a4","message":{"role":"user","content":"plain"}}`,
	}, "\n") + "\n"
	parts := 0
	check := func(name string, data []byte) {
		var scratch StringChunks
		tr, plain := Parser{Scratch: &scratch}, Parser{}
		for i, line := range bytes.Split(data, []byte("\n")) {
			e1, d1, s1 := plain.ParseLine(bytes.Clone(line), int64(i))
			e2, d2, s2 := tr.ParseLine(line, int64(i))
			if s1 != s2 || (e1 == nil) != (e2 == nil) {
				t.Fatalf("%s line %d: plain %v %v, scratch %v %v", name, i+1, e1, s1, e2, s2)
			}
			if e1 == nil {
				continue
			}
			if !reflect.DeepEqual(*e1, *e2) || !reflect.DeepEqual(d1, bodiesAsStrings(d2)) {
				t.Fatalf("%s line %d: plain %+v %+v, scratch %+v %+v", name, i+1, *e1, d1, *e2, d2)
			}
			if d2.Message != nil {
				parts += len(d2.Message.Content.Parts)
			}
		}
	}
	check("extra", []byte(extra))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		check(filepath.Base(f), data)
	}
	if parts < 100 {
		t.Errorf("only %d content parts compared", parts)
	}
}

// bodiesAsStrings returns a copy of d, a Decoded of a transient parse
// (Parser.Scratch), with its text bodies as a plain parse gives them:
// strings, no bytes.
func bodiesAsStrings(d *Decoded) *Decoded {
	str := func(s *string, b *[]byte) {
		if *b != nil {
			*s, *b = string(*b), nil
		}
	}
	content := func(c Content) Content {
		str(&c.Text, &c.TextBytes)
		if c.Parts != nil {
			c.Parts = slices.Clone(c.Parts)
			for i := range c.Parts {
				p := &c.Parts[i]
				str(&p.Text, &p.TextBytes)
				str(&p.Thinking, &p.ThinkingBytes)
			}
		}
		return c
	}
	out := *d
	str(&out.Summary, &out.SummaryBytes)
	if d.Message != nil {
		m := *d.Message
		str(&m.Command, &m.CommandBytes)
		str(&m.Output, &m.OutputBytes)
		m.Content = content(m.Content)
		out.Message = &m
	}
	if d.Content != nil {
		c := content(*d.Content)
		out.Content = &c
	}
	if d.Replacement != nil {
		c := content(*d.Replacement)
		out.Replacement = &c
	}
	return &out
}

// FuzzScratchAgrees: for any line, a transient parse (Parser.Scratch: the
// text bodies as bytes aliasing the line or the reused body buffer) gives
// the skip reason, Entry and Decoded of a plain parse, its bodies read as
// strings; a second line parsed first leaves its bodies in the buffer, so
// a body of the fuzzed line must not carry any of them.
func FuzzScratchAgrees(f *testing.F) {
	for _, s := range []string{
		`{"type":"message","id":"a","message":{"role":"user","content":"hi\n\u00e9"}}`,
		`{"type":"message","id":"a","message":{"role":"assistant","content":[{"type":"thinking","thinking":"a\"b"},{"type":"text","text":"\ud83d\ude00 \ud83d"},{"type":"toolCall","id":"c","name":"history","arguments":{"action":"list_items"}}],"stopReason":"toolUse"}}`,
		`{"type":"message","id":"a","message":{"role":"bashExecution","command":"ls\t-l","output":"x\u0000\xff"}}`,
		`{"type":"branch_summary","id":"b","fromId":"a","summary":"\u0041"}`,
		`{"type":"compaction","id":"c","summary":"","firstKeptEntryId":"a"}`,
		`{"type":"custom_message","id":"w","customType":"x","content":"s\/t","display":true}`,
		`{"type":"message","id":"a","message":{"role":"user","content":[{"text":"a\nb","type":"x","thinking":"\u00e9"},{"type":"text","text":"\ud83d\ude00\n"}]}}`,
		`{"type":"context_edit","id":"e","targetId":"a","replacement":{"content":[{"type":"text","text":"t\r"}]}}`,
	} {
		f.Add([]byte(s))
	}
	hdr := []byte(`{"type":"session","version":3,"id":"s"}`)
	before := []byte(`{"type":"message","id":"z","message":{"role":"user","content":[{"type":"text","text":"\u0042EFORE\n"},{"type":"thinking","thinking":"\ud83dBEFORE"}]}}`)
	f.Fuzz(func(t *testing.T, line []byte) {
		if bytes.IndexByte(line, '\n') >= 0 {
			return
		}
		plain, tr := Parser{}, Parser{Scratch: new(StringChunks)}
		plain.ParseLine(hdr, 0)
		tr.ParseLine(hdr, 0)
		tr.ParseLine(bytes.Clone(before), 1)
		tr.NextLine, tr.NextSeq = plain.NextLine, plain.NextSeq
		e1, d1, s1 := plain.ParseLine(bytes.Clone(line), 2)
		e2, d2, s2 := tr.ParseLine(line, 2)
		if s1 != s2 || (e1 == nil) != (e2 == nil) {
			t.Fatalf("plain %v %+v, scratch %v %+v", s1, e1, s2, e2)
		}
		if e1 == nil {
			return
		}
		if !reflect.DeepEqual(*e1, *e2) || !reflect.DeepEqual(d1, bodiesAsStrings(d2)) {
			t.Fatalf("plain %+v %+v, scratch %+v %+v", *e1, d1, *e2, bodiesAsStrings(d2))
		}
	})
}
