package session

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
)

// decodeBody crosses the string at d.i (its opening quote) and decodes it
// as a text body in the same pass: the bytes rawString followed by
// bodyOf give, with the same errors, for a transient parse (d.scratch
// set). Crossing and decoding were two passes over every body with an
// escape (rawString's, then appendUnquoted's search for the next
// backslash), a quarter of a cold index's CPU on the bench sessions
// (docs/benchmarks.md, "Full index CPU: one pass over each text body").
//
// The result aliases the line when the body holds no escape and is valid
// UTF-8 (as bodyOf's). Otherwise, with inPlace, it is decoded over the
// body's own raw bytes in the line (body's rule: each decoded byte is
// written at or before the raw byte it comes from, after that byte was
// read; an invalid UTF-8 byte, which becomes U+FFFD's three, moves the
// decoding to the body buffer first); without inPlace it goes to the
// scratch's body buffer, leaving the line as it is. Lone surrogate
// escapes are kept (wtf8.go), as for every text body.
//
// Errors: errSyntax for what rawString refuses (an unterminated string, a
// raw control character, an invalid escape).
func (d *decoder) decodeBody(inPlace bool) ([]byte, error) {
	b := d.b
	if d.i >= len(b) || b[d.i] != '"' {
		return nil, errSyntax
	}
	start := d.i + 1
	i, run := start, start
	// out holds the decoded bytes from its index o on: nil until the
	// first escape or invalid byte (the body is then b[start:i] as is);
	// the line itself (out = b[:w], o = start) in place, else the body
	// buffer (o = where this body starts in it).
	var out []byte
	o := 0
	c := d.scratch
	// Every byte of the current literal run is ORed in: bit 7 clear means
	// the run is ASCII, so valid UTF-8.
	var seen uint64
	for {
		for i+8 <= len(b) {
			w := binary.LittleEndian.Uint64(b[i:])
			if m := stopAt(w); m != 0 {
				k := bits.TrailingZeros64(m) >> 3
				seen |= w & (1<<(8*k) - 1)
				i += k
				break
			}
			seen |= w
			i += 8
		}
		if i >= len(b) {
			return nil, errSyntax
		}
		ch := b[i]
		if ch >= 0x20 && ch != '"' && ch != '\\' {
			seen |= uint64(ch)
			i++ // the last bytes, fewer than eight, one at a time
			continue
		}
		if ch < 0x20 {
			return nil, errSyntax
		}
		// The literal run b[run:i] ends here.
		lit := b[run:i]
		valid := seen&0x8080808080808080 == 0 || utf8.Valid(lit)
		seen = 0
		switch {
		case out == nil && valid && ch == '"':
			d.i = i + 1
			return b[start:i], nil
		case out == nil && valid && inPlace:
			out, o = b[:i], start
		case out == nil:
			n := len(c.bodies)
			out = append(Grow(c.bodies, bodyRoom(len(b)-start, valid)), b[start:run]...)
			o = n
			inPlace = false
			fallthrough
		default:
			if !valid && inPlace {
				// U+FFFD is longer than the byte it replaces: off the line.
				n := len(c.bodies)
				out = append(Grow(c.bodies, bodyRoom(len(b)-start, false)), out[o:]...)
				o = n
				inPlace = false
			}
			if valid {
				out = append(out, lit...)
			} else {
				out = appendFixUTF8(out, lit)
			}
		}
		if ch == '"' {
			d.i = i + 1
			if inPlace {
				return out[o:], nil
			}
			c.bodies = out
			return out[o:len(out):len(out)], nil
		}
		// An escape.
		if i+1 >= len(b) {
			return nil, errSyntax
		}
		switch e := b[i+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			if !isHex4(b, i+2) {
				return nil, errSyntax
			}
			r := hex4(b[i+2 : i+6])
			i += 6
			if utf16.IsSurrogate(r) {
				if i+1 < len(b) && b[i] == '\\' && b[i+1] == 'u' && isHex4(b, i+2) {
					if dec := utf16.DecodeRune(r, hex4(b[i+2:i+6])); dec != utf8.RuneError {
						out = utf8.AppendRune(out, dec)
						i += 6
						run = i
						continue
					}
				}
				out = appendSurrogate(out, r)
			} else {
				out = utf8.AppendRune(out, r)
			}
			run = i
			continue
		default:
			return nil, errSyntax
		}
		i += 2
		run = i
	}
}

// isHex4 reports whether b[i:i+4] are four hex digits.
func isHex4(b []byte, i int) bool {
	return i+4 <= len(b) && isHex(b[i]) && isHex(b[i+1]) && isHex(b[i+2]) && isHex(b[i+3])
}

// bodyRoom is the body buffer room decodeBody makes for a body whose raw
// form is at most rest bytes: a body decodes to at most its raw length
// while its bytes are valid UTF-8, three times it otherwise (bodyOf's
// bound), so the buffer is grown once.
func bodyRoom(rest int, valid bool) int {
	if valid {
		return rest
	}
	return 3 * rest
}
