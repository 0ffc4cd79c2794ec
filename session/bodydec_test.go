package session

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// twoPassBody is what decodeBody replaced: rawString, then bodyOf.
func twoPassBody(d *decoder, inPlace bool) ([]byte, error) {
	raw, esc, err := d.rawString()
	if err != nil {
		return nil, err
	}
	return d.bodyOf(raw, esc, d.ascii, inPlace), nil
}

// randomBodyLine is a JSON string (often broken on purpose) followed by
// other bytes: literal ASCII and UTF-8 runs, every escape, surrogate
// pairs and lone or reversed surrogates, invalid UTF-8, raw control
// characters, bad escapes, a missing closing quote.
func randomBodyLine(r *rand.Rand) []byte {
	var b bytes.Buffer
	b.WriteByte('"')
	for n := r.IntN(12); n > 0; n-- {
		switch r.IntN(16) {
		case 0, 1, 2:
			b.WriteString("plain text of some length, ")
			for k := r.IntN(20); k > 0; k-- {
				b.WriteByte(byte('a' + r.IntN(26)))
			}
		case 3:
			b.WriteString("ünïcødé ☃ 😀")
		case 4:
			b.WriteString([]string{`\n`, `\t`, `\"`, `\\`, `\/`, `\b`, `\f`, `\r`}[r.IntN(8)])
		case 5:
			fmt.Fprintf(&b, `\u%04x`, r.IntN(0x10000))
		case 6:
			b.WriteString(`\ud83d\ude00`) // a pair
		case 7:
			b.WriteString([]string{`\ud83d`, `\ude00`, `\ude00\ud83d`, `\ud83dx`, `\ud83d\u0041`, `\uD83D\uDE00`}[r.IntN(6)])
		case 8:
			b.WriteByte([]byte{0xff, 0xc3, 0x80, 0xe2, 0xed}[r.IntN(5)]) // invalid or cut UTF-8
		case 9:
			if r.IntN(8) == 0 {
				b.WriteByte(byte(r.IntN(0x20))) // a raw control character
			}
		case 10:
			if r.IntN(8) == 0 {
				b.WriteString([]string{`\x`, `\u12`, `\u12g4`, `\`}[r.IntN(4)])
			}
		default:
			b.WriteString("x")
		}
	}
	if r.IntN(20) != 0 {
		b.WriteByte('"')
	}
	b.WriteString([]string{"", `,"k":1}`, "}", `"tail"`}[r.IntN(4)])
	return b.Bytes()
}

// TestDecodeBodyIsTwoPass: the one-pass body decoder gives, for 200,000
// random strings and both destinations, the bytes, the error and the end
// position of the two passes it replaced, and without inPlace leaves the
// line as it was.
func TestDecodeBodyIsTwoPass(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for n := 0; n < 200000; n++ {
		line := randomBodyLine(r)
		for _, inPlace := range []bool{true, false} {
			var s1, s2 StringChunks
			s1.bodies = append(s1.bodies, "earlier body"...)
			s2.bodies = append(s2.bodies, "earlier body"...)
			l1, l2 := bytes.Clone(line), bytes.Clone(line)
			d1 := &decoder{b: l1, scratch: &s1}
			d2 := &decoder{b: l2, scratch: &s2}
			want, werr := twoPassBody(d1, inPlace)
			got, gerr := d2.decodeBody(inPlace)
			if (werr == nil) != (gerr == nil) {
				t.Fatalf("%q inPlace=%v: error %v, two passes %v", line, inPlace, gerr, werr)
			}
			if werr != nil {
				continue
			}
			if !bytes.Equal(got, want) || d1.i != d2.i {
				t.Fatalf("%q inPlace=%v: %q ending at %d, two passes %q ending at %d", line, inPlace, got, d2.i, want, d1.i)
			}
			if !inPlace && !bytes.Equal(l2, line) {
				t.Fatalf("%q: the line was changed to %q", line, l2)
			}
			if !bytes.Equal(l2[d2.i:], line[d2.i:]) {
				t.Fatalf("%q inPlace=%v: the line past the string was changed to %q", line, inPlace, l2)
			}
			if string(s2.bodies[:12]) != "earlier body" {
				t.Fatalf("%q inPlace=%v: an earlier body was overwritten: %q", line, inPlace, s2.bodies[:12])
			}
		}
	}
}

// TestDecodeBodyCases pins decodeBody's answer for the cases its rules
// name (the right bytes written out by hand).
func TestDecodeBodyCases(t *testing.T) {
	for _, c := range []struct {
		in, want string
		bad      bool
	}{
		{in: `"plain"x`, want: "plain"},
		{in: `"a\nb\"c"`, want: "a\nb\"c"},
		{in: `"\ud83d\ude00!"`, want: "😀!"},
		{in: `"\ud83d!"`, want: "\xed\xa0\xbd!"}, // a lone surrogate kept (WTF-8)
		{in: `"\u00e9t\u00E9"`, want: "été"},
		{in: "\"a\xffb\\n\"", want: "a\uFFFDb\n"},
		{in: "\"\xffb\"", want: "\uFFFDb"},
		{in: `"a\qb"`, bad: true},
		{in: `"a\u12"`, bad: true},
		{in: "\"a\tb\"", bad: true},
		{in: `"abc`, bad: true},
		{in: `"abc\`, bad: true},
	} {
		for _, inPlace := range []bool{true, false} {
			d := &decoder{b: []byte(c.in), scratch: &StringChunks{}}
			got, err := d.decodeBody(inPlace)
			if c.bad {
				if err == nil {
					t.Errorf("%q inPlace=%v: %q, want an error", c.in, inPlace, got)
				}
				continue
			}
			if err != nil || string(got) != c.want {
				t.Errorf("%q inPlace=%v: %q, %v; want %q", c.in, inPlace, got, err, c.want)
			}
		}
	}
}
