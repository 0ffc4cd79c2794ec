package session

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestRuneCountIsRuneCountInString: runeCount equals the standard library's
// count (the rule of Item.Chars) on ASCII, multi-byte text, invalid bytes,
// truncated sequences and surrogate encodings at every position relative to
// the 8-byte words, and on random bytes.
func TestRuneCountIsRuneCountInString(t *testing.T) {
	pieces := []string{"a", "abcdefgh", "é", "日本", "😀", "\xff", "\xe6\x97", "\xf0\x9f\x98", "\xed\xa0\x80", "\xc0\xaf", "\n", "\x80\x80"}
	cases := []string{"", "a", "abcdefg", "abcdefgh", "abcdefghi", strings.Repeat("x", 1000) + "é" + strings.Repeat("y", 17)}
	for lead := 0; lead < 41; lead++ { // past a 32-byte step and a word
		for _, p := range pieces {
			for trail := 0; trail < 9; trail++ {
				cases = append(cases, strings.Repeat("a", lead)+p+strings.Repeat("b", trail))
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		var b strings.Builder
		for n := r.IntN(40); n > 0; n-- {
			if r.IntN(3) == 0 {
				b.WriteString(pieces[r.IntN(len(pieces))])
			} else {
				b.WriteByte(byte(r.IntN(256)))
			}
		}
		cases = append(cases, b.String())
	}
	for _, s := range cases {
		if got, want := runeCount(s), utf8.RuneCountInString(s); got != want {
			t.Fatalf("runeCount(%q) = %d, want %d", s, got, want)
		}
		if got, want := runeCount([]byte(s)), utf8.RuneCountInString(s); got != want {
			t.Fatalf("runeCount([]byte(%q)) = %d, want %d", s, got, want)
		}
	}
	// Known values computed by hand: 3 ASCII + 1 two-byte + 1 invalid byte.
	if got := runeCount("abc\u00e9\xff"); got != 5 {
		t.Fatalf("runeCount = %d, want 5", got)
	}
}

func BenchmarkRuneCount(b *testing.B) {
	s := strings.Repeat("func main() { fmt.Println(\"hello\") }\n", 3000) + "é"
	b.SetBytes(int64(len(s)))
	b.Run("runeCount", func(b *testing.B) {
		for b.Loop() {
			runeCount(s)
		}
	})
	b.Run("stdlib", func(b *testing.B) {
		for b.Loop() {
			utf8.RuneCountInString(s)
		}
	})
}
