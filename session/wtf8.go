package session

import "unicode/utf8"

// Lone surrogates in text bodies. Pi reads its session file with
// JSON.parse, so a `\ud83d` escape without its pair is one UTF-16 code unit
// of a JavaScript string, and Pi hands it to the model as that same escape
// (JSON.stringify writes a lone surrogate as `\uXXXX`, ECMA-262
// "QuoteJSONString"). encoding/json would turn it into U+FFFD, so the
// decoder keeps it in the bodies history serves (message text and
// thinking, string content, bash command and output, branch summaries) in
// the generalized UTF-8 form of WTF-8 (https://simonsapin.github.io/wtf-8/):
// the three bytes ED A0..BF 80..BF of its code point. No other bytes can
// produce them: an invalid byte of the file becomes U+FFFD (three bytes EF
// BF BD), as encoding/json and Node's UTF-8 decoding do. Such a surrogate
// is one code point: CharWidth, CharWidthInString and CountChars count it
// as one, and history writes it back as its `\uXXXX` escape.

// isSurrogate3 reports whether b0 b1 b2 encode a surrogate code point
// (U+D800..U+DFFF) the way WTF-8 does.
func isSurrogate3(b0, b1, b2 byte) bool {
	return b0 == 0xED && b1 >= 0xA0 && b1 <= 0xBF && b2 >= 0x80 && b2 <= 0xBF
}

// Surrogate returns the surrogate code point (U+D800..U+DFFF) WTF-8
// encodes at the start of s, and whether s starts with one.
func Surrogate(s string) (rune, bool) {
	if len(s) < 3 || !isSurrogate3(s[0], s[1], s[2]) {
		return 0, false
	}
	return 0xD000 | rune(s[1]&0x3F)<<6 | rune(s[2]&0x3F), true
}

// appendSurrogate appends the WTF-8 bytes of surrogate code point r.
func appendSurrogate(out []byte, r rune) []byte {
	return append(out, 0xE0|byte(r>>12), 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
}

// CharWidth is the byte length of the code point at the start of b (0 for
// an empty b): a UTF-8 sequence's length, 3 for a WTF-8 surrogate, 1 for
// any other invalid byte (utf8.DecodeRune's step).
func CharWidth(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	if b[0] < utf8.RuneSelf {
		return 1
	}
	if len(b) >= 3 && isSurrogate3(b[0], b[1], b[2]) {
		return 3
	}
	_, w := utf8.DecodeRune(b)
	return w
}

// CharWidthInString is CharWidth of a string.
func CharWidthInString(s string) int {
	if len(s) == 0 {
		return 0
	}
	if s[0] < utf8.RuneSelf {
		return 1
	}
	if len(s) >= 3 && isSurrogate3(s[0], s[1], s[2]) {
		return 3
	}
	_, w := utf8.DecodeRuneInString(s)
	return w
}

// CountChars is the number of code points of s as CharWidthInString steps
// them: utf8.RuneCountInString (computed by runeCount, eight ASCII bytes
// at a time), with a WTF-8 surrogate counted once. s is a string or the
// bytes of one (an item text rendered into a reused buffer,
// history.RenderTo).
func CountChars[T ~string | ~[]byte](s T) int {
	n := runeCount(s)
	for i := indexByte(s, 0xED); i >= 0 && i+3 <= len(s); {
		if isSurrogate3(s[i], s[i+1], s[i+2]) {
			n -= 2 // utf8.RuneCountInString counted each of its 3 bytes
			i += 3
		} else {
			i++
		}
		k := indexByte(s[i:], 0xED)
		if k < 0 {
			break
		}
		i += k
	}
	return n
}

// DecodeText decodes b, exactly one JSON string value (its quotes
// included, whitespace around it allowed), as the decoder decodes a text
// body: escapes as encoding/json decodes them, except that a lone
// surrogate escape (`\ud800` without its pair) stays that code point in
// WTF-8 instead of becoming U+FFFD. A search query decoded so finds the
// item text the same escape was decoded into (api's history
// search_contents body). Errors: b is not one JSON string.
func DecodeText(b []byte) (string, error) {
	d := decoder{b: b}
	d.ws()
	s, err := d.text()
	if err != nil {
		return "", err
	}
	d.ws()
	if d.i != len(b) {
		return "", errSyntax
	}
	return s, nil
}
