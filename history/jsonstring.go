package history

import "unicode/utf8"

// appendJSONString appends s to dst as a JSON string, byte for byte as
// encoding/json encodes a string with HTML escaping off
// (json.Encoder.SetEscapeHTML(false); appendString in Go's
// src/encoding/json/encode.go): `"` and `\` get a backslash; \b, \f,
// \n, \r and \t their short escapes; the other bytes below 0x20 \u00XX
// (lower-case hex); each byte of invalid UTF-8 \ufffd; U+2028 and
// U+2029 \u2028 and \u2029; everything else is copied.
// TestAppendJSONStringIsEncodingJSONs compares the two. Written out
// because an encoder per string allocated and zeroed a buffer for each
// search preview (docs/benchmarks.md, "Search with a hit: previews
// encoded once").
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = appendJSONStringBody(dst, s)
	return append(dst, '"')
}

// appendJSONStringBody is appendJSONString without the quotes.
func appendJSONStringBody(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(dst, s[start:]...)
}
