package history

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// TestAppendJSONStringIsEncodingJSONs: appendJSONString writes what
// encoding/json's Encoder with SetEscapeHTML(false) writes for the same
// string, for every single byte 0x00-0xff, the runes it treats apart
// (U+2028, U+2029, U+FFFD itself, astral ones) and 20,000 random strings
// of them; three cases are written out by hand.
func TestAppendJSONStringIsEncodingJSONs(t *testing.T) {
	for s, want := range map[string]string{
		"a\"b\\c\x01\x7f<>&": `"a\"b\\c\u0001` + "\x7f" + `<>&"`,
		"\b\f\n\r\t":         `"\b\f\n\r\t"`,
		"\u2028x\xffé":       `"\u2028x\ufffdé"`,
	} {
		if got := string(appendJSONString(nil, s)); got != want {
			t.Errorf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
	}
	encode := func(s string) []byte {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	}
	var pieces []string
	for b := range 256 {
		pieces = append(pieces, string([]byte{byte(b)}))
	}
	pieces = append(pieces, "\u2028", "\u2029", "\ufffd", "é", "😀", "\U0010FFFF", "\xed\xa0\xbd", "\xe2\x80", "plain text ")
	for _, p := range pieces {
		if got, want := appendJSONString([]byte("x"), p), append([]byte("x"), encode(p)...); !bytes.Equal(got, want) {
			t.Fatalf("appendJSONString(%q) = %s, encoding/json %s", p, got, want)
		}
	}
	r := rand.New(rand.NewPCG(3, 5))
	for range 20000 {
		var s []byte
		for range r.IntN(12) {
			s = append(s, pieces[r.IntN(len(pieces))]...)
		}
		if got, want := appendJSONString(nil, string(s)), encode(string(s)); !bytes.Equal(got, want) {
			t.Fatalf("appendJSONString(%q) = %s, encoding/json %s", s, got, want)
		}
		if got := jsonString(string(s)); got != string(encode(string(s))) {
			t.Fatalf("jsonString(%q) = %s", s, got)
		}
	}
}
