package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestNoteWriteLoneSurrogateRefused: a notes write whose text holds a lone
// surrogate escape is refused with 422 naming the surrogate and its
// position, never stored as U+FFFD; a whole pair and a real U+FFFD are
// written as sent. Hand-computed: "a\udc00b" is a (1), U+DC00 (2), b (3);
// "x\ud83d\ude00\ud800" is x (1), U+1F600 (2), U+D800 (3).
func TestNoteWriteLoneSurrogateRefused(t *testing.T) {
	s := newTestServer(t, serverOptions{})
	b := newSessionBuilder("nsur")
	b.boundary(0, "w0", "w0", "")
	b.user("keep notes")
	s.writeFile("nsur.jsonl", b.bytes())

	for _, tc := range []struct{ op, text, want string }{
		{"notes/write_file", `"a\udc00b"`, `Note text holds a lone surrogate \udc00 at character 2 (half of a UTF-16 pair without the other half), which a note cannot store; send the whole pair or remove it`},
		{"notes/append_to_file", `"x\ud83d\ude00\ud800"`, `Note text holds a lone surrogate \ud800 at character 3 (half of a UTF-16 pair without the other half), which a note cannot store; send the whole pair or remove it`},
	} {
		r := s.codex(tc.op, "nsur", "", map[string]any{"path": "s.md", "text": json.RawMessage(tc.text)})
		if r.Status != http.StatusUnprocessableEntity {
			t.Fatalf("%s %s: status %d, want 422; body %s", tc.op, tc.text, r.Status, r.Body)
		}
		if p := r.problem(t); !strings.Contains(p.Detail, tc.want) {
			t.Errorf("%s %s: detail %q lacks %q", tc.op, tc.text, p.Detail, tc.want)
		}
	}
	// A lone surrogate in the path is refused too, not turned into U+FFFD.
	r := s.codex("notes/write_file", "nsur", "", map[string]any{"path": json.RawMessage(`"p\ud800.md"`), "text": "t"})
	if p := r.problem(t); r.Status != http.StatusUnprocessableEntity || !strings.Contains(p.Detail, "the path must be valid UTF-8") {
		t.Errorf("path: status %d, body %s", r.Status, r.Body)
	}
	// A pair is one character; U+FFFD sent as itself is kept.
	r = s.codexOK("notes/write_file", "nsur", "", map[string]any{"path": "s.md", "text": json.RawMessage(`"a\ud83d\ude00b\ufffd"`)}, nil)
	if !strings.Contains(string(r.Body), `"text":"a😀b`+"\ufffd"+`"`) {
		t.Errorf("pair: %s", r.Body)
	}
}

// TestNoteWriteInvisiblePathRefused: a notes write to a path holding a
// bidirectional control or another invisible format character is refused
// with 422 naming the character and its 1-based position; ZWJ (emoji) is
// kept. Hand-computed: "/root/notes/" is 12 characters, so the U+202E of
// "/root/notes/\u202edm.txt" is character 13; "a\u200bb.md" has U+200B
// ZERO WIDTH SPACE at character 2.
func TestNoteWriteInvisiblePathRefused(t *testing.T) {
	s := newTestServer(t, serverOptions{})
	b := newSessionBuilder("nbidi")
	b.boundary(0, "w0", "w0", "")
	b.user("keep notes")
	s.writeFile("nbidi.jsonl", b.bytes())

	for _, tc := range []struct{ op, path, want string }{
		{"notes/write_file", "/root/notes/\u202edm.txt", `it holds U+202E RIGHT-TO-LEFT OVERRIDE at character 13`},
		{"notes/append_to_file", "a\u200bb.md", `it holds U+200B ZERO WIDTH SPACE at character 2`},
		{"notes/write_file", "x\u2066y.md", `it holds U+2066 LEFT-TO-RIGHT ISOLATE at character 2`},
		{"notes/write_file", "\u200fx.md", `it holds U+200F RIGHT-TO-LEFT MARK at character 1`},
		{"notes/write_file", "x\u061c.md", `it holds U+061C ARABIC LETTER MARK at character 2`},
		{"notes/write_file", "\ufeffx.md", `it holds U+FEFF ZERO WIDTH NO-BREAK SPACE at character 1`},
	} {
		r := s.codex(tc.op, "nbidi", "", map[string]any{"path": tc.path, "text": "t"})
		if r.Status != http.StatusUnprocessableEntity {
			t.Errorf("%s %q: status %d, want 422; body %s", tc.op, tc.path, r.Status, r.Body)
			continue
		}
		if p := r.problem(t); !strings.Contains(p.Detail, tc.want) || !strings.Contains(p.Detail, "remove it from the path") {
			t.Errorf("%s %q: detail %q lacks %q", tc.op, tc.path, p.Detail, tc.want)
		}
	}
	r := s.codexOK("notes/write_file", "nbidi", "", map[string]any{"path": "👩\u200d💻.md", "text": "t"}, nil)
	if !strings.Contains(string(r.Body), `"path":"/root/notes/👩`+"\u200d"+`💻.md"`) {
		t.Errorf("ZWJ path: %s", r.Body)
	}
}
