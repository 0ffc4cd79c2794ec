package notes

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/runenames"
)

// Characters a note may not be created with, found before anything is
// planned so that nothing the caller sent is changed without a word.

// invisibleInPath finds the first character of a note path given to
// write_file or append_to_file that changes how the path displays without
// being seen: the bidirectional controls of Unicode UAX #9 §2
// (https://www.unicode.org/reports/tr9/: U+202A–U+202E embeddings and
// overrides, U+2066–U+2069 isolates, U+200E/U+200F marks, U+061C ARABIC
// LETTER MARK), so that "/root/notes/\u202edm.txt" cannot show as
// "…/txt.md", and every other format character (general category Cf, such as
// U+200B ZERO WIDTH SPACE, U+2060 WORD JOINER, U+FEFF, U+00AD SOFT HYPHEN),
// so that two paths that look the same are the same. U+200C ZERO WIDTH
// NON-JOINER and U+200D ZERO WIDTH JOINER are kept: they are part of the
// spelling of Persian and Indic words and of emoji sequences. It returns the
// character and its 1-based position in characters (code points), or ok
// false. s must be valid UTF-8 (badChars runs first).
func invisibleInPath(s string) (r rune, pos int, ok bool) {
	pos = 0
	for _, c := range s {
		pos++
		if c == 0x200C || c == 0x200D {
			continue
		}
		if unicode.Is(unicode.Cf, c) || c == 0x061C || (c >= 0x200E && c <= 0x200F) || (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069) {
			return c, pos, true
		}
	}
	return 0, 0, false
}

// charName spells a character for an error message: "U+202E
// RIGHT-TO-LEFT OVERRIDE" (names from the Unicode Character Database via
// golang.org/x/text/unicode/runenames).
func charName(r rune) string {
	if n := runenames.Name(r); n != "" {
		return fmt.Sprintf("U+%04X %s", r, n)
	}
	return fmt.Sprintf("U+%04X", r)
}

// loneSurrogate finds the first lone surrogate in text decoded as WTF-8
// (session.DecodeText keeps a `\udc00` escape without its pair as the
// three bytes ED B0 80, which are not valid UTF-8). It returns the
// surrogate, its 1-based position in characters (code points, each lone
// surrogate counting as one), or ok false when text holds none.
func loneSurrogate(text string) (r rune, pos int, ok bool) {
	for i := 0; i < len(text); {
		pos++
		c, n := utf8.DecodeRuneInString(text[i:])
		if c == utf8.RuneError && n <= 1 {
			if i+2 < len(text) && text[i] == 0xED && text[i+1] >= 0xA0 && text[i+1] <= 0xBF && text[i+2] >= 0x80 && text[i+2] <= 0xBF {
				return 0xD000 | rune(text[i+1]&0x3F)<<6 | rune(text[i+2]&0x3F), pos, true
			}
			n = 1
		}
		i += n
	}
	return 0, 0, false
}

// linesLoneSurrogate refuses, with *Error CodeInvalid and
// MsgFileLoneSurrogate, the lines of the note file at path (the first
// being line first) when one holds a lone surrogate (loneSurrogate); nil
// otherwise.
func linesLoneSurrogate(path string, lines []string, first int) error {
	for i, line := range lines {
		if r, pos, ok := loneSurrogate(line); ok {
			return invalidf(fmt.Sprintf(MsgFileLoneSurrogate, path, r, first+i, pos))
		}
	}
	return nil
}
