package session

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// foldSurrogates compares a decoded value with encoding/json's (the
// oracle): every WTF-8 surrogate the decoder keeps in a text body is
// U+FFFD there.
var foldSurrogates = cmp.Transformer("foldSurrogates", func(s string) string {
	if strings.IndexByte(s, 0xED) < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if _, ok := Surrogate(s[i:]); ok {
			b.WriteRune('\uFFFD')
			i += 3
			continue
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
})

// TestDecoderKeepsLoneSurrogates: a lone `\ud83d` (and a lone low
// surrogate, and a reversed pair) in every text body decodes to the WTF-8
// bytes of that code point (ED A0 BD for U+D83D, computed by hand: 1110_1101
// 10_100000 10_111101), a pair to its UTF-8 character; ids keep
// encoding/json's U+FFFD, and raw invalid bytes of the file (even ED A0 BD
// itself) become U+FFFD, one per byte, as Node's decoding gives them.
func TestDecoderKeepsLoneSurrogates(t *testing.T) {
	hdr := []byte(`{"type":"session","version":3,"id":"s"}`)
	parse := func(line string) (*Entry, *Decoded) {
		t.Helper()
		var p Parser
		p.ParseLine(hdr, 0)
		e, d, skip := p.ParseLine([]byte(line), 100)
		if skip != SkipNone {
			t.Fatalf("%s: skipped (%s)", line, skip)
		}
		return e, d
	}
	const lone = "a\xed\xa0\xbdb" // a, U+D83D, b
	e, d := parse(`{"type":"message","id":"i\ud83d","message":{"role":"user","content":"a\ud83db"}}`)
	if d.Message.Content.Text != lone {
		t.Errorf("string content = %q, want %q", d.Message.Content.Text, lone)
	}
	if e.ID != "i\uFFFD" {
		t.Errorf("id = %q, want U+FFFD for the lone surrogate (encoding/json's rule for ids)", e.ID)
	}
	_, d = parse(`{"type":"message","id":"m","message":{"role":"assistant","content":[{"type":"text","text":"a\ud83db"},{"type":"thinking","thinking":"\ude00\ud83d"},{"type":"text","text":"\ud83d\ude00"}]}}`)
	if got := d.Message.Content.Parts; got[0].Text != lone || got[1].Thinking != "\xed\xb8\x80\xed\xa0\xbd" || got[2].Text != "😀" {
		t.Errorf("parts = %q %q %q", got[0].Text, got[1].Thinking, got[2].Text)
	}
	_, d = parse(`{"type":"message","id":"b","message":{"role":"bashExecution","command":"echo \ud83d","output":"a\ud83db"}}`)
	if d.Message.Command != "echo \xed\xa0\xbd" || d.Message.Output != lone {
		t.Errorf("bash command %q output %q", d.Message.Command, d.Message.Output)
	}
	_, d = parse(`{"type":"branch_summary","id":"s","fromId":"x","summary":"a\ud83db"}`)
	if d.Summary != lone {
		t.Errorf("summary = %q", d.Summary)
	}
	_, d = parse("{\"type\":\"message\",\"id\":\"r\",\"message\":{\"role\":\"user\",\"content\":\"a\xed\xa0\xbdb\"}}")
	if d.Message.Content.Text != "a\uFFFD\uFFFD\uFFFDb" {
		t.Errorf("raw bytes ED A0 BD = %q, want three U+FFFD", d.Message.Content.Text)
	}
	// Transient decoding (Parser.Scratch) keeps it the same way.
	var p Parser
	p.Scratch = new(StringChunks)
	p.ParseLine(hdr, 0)
	if _, d, _ := p.ParseLine([]byte(`{"type":"message","id":"t","message":{"role":"user","content":[{"type":"text","text":"a\ud83db"}]}}`), 100); string(d.Message.Content.Parts[0].TextBytes) != lone {
		t.Errorf("transient part = %q", d.Message.Content.Parts[0].TextBytes)
	}
}

// TestCountChars: a WTF-8 surrogate is one code point, an invalid byte one,
// a UTF-8 character one.
func TestCountChars(t *testing.T) {
	for _, c := range []struct {
		s     string
		chars int
		first int
	}{
		{"", 0, 0},
		{"a\xed\xa0\xbdb", 3, 1},
		{"\xed\xa0\xbd", 1, 3},
		{"\xed\x9f\xbf", 1, 3},              // U+D7FF, valid UTF-8
		{"\xed\xa0", 2, 1},                  // a cut surrogate: two invalid bytes
		{"é\xed\xbf\xbf\xed\xa0\x80", 3, 2}, // é, U+DFFF, U+D800
		{"\xff\xed\xa0\xbd\xed", 3, 1},
	} {
		if n := CountChars(c.s); n != c.chars {
			t.Errorf("CountChars(%q) = %d, want %d", c.s, n, c.chars)
		}
		if n := CountChars([]byte(c.s)); n != c.chars {
			t.Errorf("CountChars([]byte(%q)) = %d, want %d", c.s, n, c.chars)
		}
		if w := CharWidthInString(c.s); w != c.first {
			t.Errorf("CharWidthInString(%q) = %d, want %d", c.s, w, c.first)
		}
		if w := CharWidth([]byte(c.s)); w != c.first {
			t.Errorf("CharWidth(%q) = %d, want %d", c.s, w, c.first)
		}
	}
	if r, ok := Surrogate("\xed\xa0\xbd"); !ok || r != 0xD83D {
		t.Errorf("Surrogate = %U %v", r, ok)
	}
}

// TestDecodeText: one JSON string decoded as a text body: a lone
// surrogate escape becomes its three WTF-8 bytes (U+D83D: ED A0 BD, by
// hand: 1110_1101 10_100000 10_111101), a pair the UTF-8 of U+1F600, an
// escaped U+FFFD stays U+FFFD; whitespace around the value is allowed,
// anything else after it or a value that is not a string is refused.
func TestDecodeText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`"half \ud83d moon"`, "half \xed\xa0\xbd moon"},
		{` "\uDC00" `, "\xed\xb0\x80"},
		{`"\ud83d\ude00"`, "\U0001F600"},
		{`"\ufffd"`, "\uFFFD"},
		{`"a\nb\"c"`, "a\nb\"c"},
	} {
		got, err := DecodeText([]byte(tc.in))
		if err != nil || got != tc.want {
			t.Errorf("DecodeText(%s) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{`"a" "b"`, `42`, `"open`, ``, `"bad \x"`} {
		if got, err := DecodeText([]byte(in)); err == nil {
			t.Errorf("DecodeText(%s) = %q, want an error", in, got)
		}
	}
}
