package history

import (
	"unicode/utf8"

	"contextd/session"
)

// TextSource gives the operations access to item texts, which stay in the
// store (or in memory in tests) rather than in the View. Offsets and
// lengths are Unicode code points; implementations must never split a code
// point and must count an invalid UTF-8 byte as one code point and a
// lone surrogate as one (the session.CountChars rule), so that
// ItemRef.Chars, Prefix and Slice agree.
type TextSource interface {
	// Prefix returns the first maxChars code points of the item's text
	// (the whole text when it is shorter; "" when maxChars ≤ 0).
	Prefix(ref ItemRef, maxChars int) (string, error)
	// Slice returns at most limitChars code points of the item's text
	// starting at code point offsetChars ("" when offsetChars is at or past
	// the end or limitChars ≤ 0; a negative offset counts as 0).
	Slice(ref ItemRef, offsetChars, limitChars int) (string, error)
	// Search calls fn, in the order of refs, for each ref whose text
	// contains query (case-sensitive literal substring; an empty query
	// matches every text). It stops when fn returns false or, when limit >
	// 0, after limit matches; limit is a hint, fn's answer is authoritative.
	// fn must not call back into the TextSource. refs is read-only (it may
	// be shared with other requests).
	Search(query string, refs ItemList, limit int, fn func(ref ItemRef) bool) error
}

// SliceChars returns at most limit code points of s starting at code point
// offset; it never splits a code point. A negative offset counts as 0; an
// offset at or past the end, or limit ≤ 0, gives "". An invalid UTF-8 byte
// counts as one code point, so consecutive slices of a string concatenate
// to it byte for byte.
func SliceChars(s string, offset, limit int) string {
	if limit <= 0 {
		return ""
	}
	start := skipChars(s, 0, offset)
	end := skipChars(s, start, limit)
	return s[start:end]
}

// skipChars returns the byte index reached by advancing n code points from
// byte index i of s (len(s) when s ends first; i when n ≤ 0).
func skipChars(s string, i, n int) int {
	for n > 0 && i < len(s) {
		if s[i] < utf8.RuneSelf {
			i++
		} else {
			i += session.CharWidthInString(s[i:])
		}
		n--
	}
	return i
}
