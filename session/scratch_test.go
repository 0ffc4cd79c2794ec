package session

import (
	"bytes"
	"testing"
)

// TestParseLineScratchKeepsEntryOwned: with Parser.Scratch, a copy of the
// Entry that ParseLine returns (the *Entry itself is reused for the next
// line) and the Header keep their values after the line's bytes and the
// scratch are overwritten (the indexer reuses both), while the Decoded
// bodies carry the decoded text (escapes resolved) of this line.
func TestParseLineScratchKeepsEntryOwned(t *testing.T) {
	var scratch []byte
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
				texts = append(texts, d.Message.Content.Text)
			}
		}
		copy(buf, bytes.Repeat([]byte("#"), len(buf))) // the indexer's buffer moves on
	}
	if len(texts) != 1 || texts[0] != "line\none" {
		t.Fatalf("decoded text %q, want [\"line\\none\"]", texts)
	}
	for i := range scratch {
		scratch[i] = '#'
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
