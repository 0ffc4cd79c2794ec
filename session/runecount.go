package session

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// runeCount is utf8.RuneCountInString(s) (history.Item.Chars: Unicode code points,
// an invalid UTF-8 byte counting as one), eight ASCII bytes at a time. It
// runs over every rendered item text while a session is indexed, most of
// it ASCII (tool output, code); the standard library's count decodes one
// rune per step. A word with a byte ≥ 0x80 falls back to decoding runes
// one by one (utf8.DecodeRuneInString, the same rule as RuneCountInString)
// until the next word (32 bytes are tested at once while they are ASCII), so the count equals the standard one for every
// string and for its bytes (TestRuneCountIsRuneCountInString).
func runeCount[T ~string | ~[]byte](s T) int {
	n := 0
	for i := 0; i < len(s); {
		// 32 bytes a step while they are ASCII: the loop's own work was
		// as much as the test's at eight.
		for len(s)-i >= 32 && (word(s[i:])|word(s[i+8:])|word(s[i+16:])|word(s[i+24:]))&0x8080808080808080 == 0 {
			n += 32
			i += 32
		}
		if i == len(s) {
			break
		}
		if len(s)-i >= 8 {
			w := s[i : i+8]
			if (uint64(w[0])|uint64(w[1])<<8|uint64(w[2])<<16|uint64(w[3])<<24|uint64(w[4])<<32|uint64(w[5])<<40|uint64(w[6])<<48|uint64(w[7])<<56)&0x8080808080808080 == 0 {
				n += 8
				i += 8
				continue
			}
		}
		if s[i] < utf8.RuneSelf {
			n++
			i++
			continue
		}
		_, size := decodeRune(s[i:])
		n++
		i += size
	}
	return n
}

// word is s's first eight bytes, little-endian (len(s) >= 8).
func word[T ~string | ~[]byte](s T) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 | uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// decodeRune is utf8.DecodeRune or utf8.DecodeRuneInString, by the type of
// s.
func decodeRune[T ~string | ~[]byte](s T) (rune, int) {
	switch v := any(s).(type) {
	case string:
		return utf8.DecodeRuneInString(v)
	case []byte:
		return utf8.DecodeRune(v)
	}
	return utf8.DecodeRuneInString(string(s))
}

// indexByte is strings.IndexByte or bytes.IndexByte, by the type of s.
func indexByte[T ~string | ~[]byte](s T, c byte) int {
	switch v := any(s).(type) {
	case string:
		return strings.IndexByte(v, c)
	case []byte:
		return bytes.IndexByte(v, c)
	}
	return strings.IndexByte(string(s), c)
}
