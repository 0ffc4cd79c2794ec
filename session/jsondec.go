package session

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// This file is a single-pass JSON decoder specialised for Pi entry lines.
// encoding/json validates a line, then decodes it, then re-scans every
// json.RawMessage and every UnmarshalJSON value: on real sessions, where
// most bytes sit in long strings (tool output, thinking), that is about
// eight passes and 25 MB/s. Here each byte is looked at once: strings are
// crossed eight bytes at a time (rawString), only the fields an Entry or
// a Decoded needs are unescaped, and every other value is validated and
// skipped.
//
// Acceptance is JSON.parse's (Pi skips any line it throws on): exactly one
// value, optional surrounding whitespace, RFC 8259 grammar. String
// decoding matches encoding/json: invalid UTF-8 bytes and lone surrogate
// escapes become U+FFFD, except that text bodies keep a lone surrogate
// (wtf8.go). FuzzDecoderAgrees checks both against
// encoding/json, values included for every line (escapes too), and
// BenchmarkDecoder (decoder_bench_test.go) times it against the
// encoding/json oracle on encoding/json and on the fastest maintained
// alternative: it takes about 0.6 of the fastest's CPU (0.3 with the
// indexer's scratch, whose text bodies are decoded in place), so it stays.

var errSyntax = errors.New("invalid JSON")

type decoder struct {
	b []byte
	i int
	// scratch, when set, makes decoding transient (Parser.Scratch):
	// every decoded string is carved from its chunks, a few large
	// allocations instead of one per string.
	scratch *StringChunks
	// treeOnly skips the bodies (message content and output, custom
	// message content, summaries) that only rendering reads: they are
	// validated and crossed, not decoded (Parser.TreeOnly).
	treeOnly bool
	// parts, with scratch, is where content parts go (one array reused
	// for every line); nil: each content allocates its own.
	parts *[]Part
	// ascii reports that the string rawString crossed last is all ASCII
	// (false may also mean: not known), so valid UTF-8.
	ascii bool
}

func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (d *decoder) ws() {
	for d.i < len(d.b) && isWS(d.b[d.i]) {
		d.i++
	}
}

// peek returns the next non-space byte (0 at the end).
func (d *decoder) peek() byte {
	d.ws()
	if d.i >= len(d.b) {
		return 0
	}
	return d.b[d.i]
}

// rawString crosses a string starting at d.i (the opening quote) and
// returns its raw body (without quotes) and whether it holds escapes. It
// checks each escape and refuses raw control characters, which JSON
// forbids. One pass: eight bytes at a time are tested for a quote, a
// backslash or a control character at once (stopAt), so a long run of
// plain text is crossed in one loop.
func (d *decoder) rawString() ([]byte, bool, error) {
	b := d.b
	if d.i >= len(b) || b[d.i] != '"' {
		return nil, false, errSyntax
	}
	start := d.i + 1
	i := start
	esc := false
	// Every byte crossed is ORed in (and some past the string: a word
	// read at its end), so bit 7 clear means all ASCII.
	var seen uint64
	for {
		for i+8 <= len(b) {
			w := binary.LittleEndian.Uint64(b[i:])
			seen |= w
			if m := stopAt(w); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		if i >= len(b) {
			return nil, false, errSyntax
		}
		switch c := b[i]; {
		case c == '"':
			d.i = i + 1
			d.ascii = seen&0x8080808080808080 == 0
			return b[start:i], esc, nil
		case c == '\\':
			esc = true
			if i+1 >= len(b) {
				return nil, false, errSyntax
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return nil, false, errSyntax
				}
				for _, h := range b[i+2 : i+6] {
					if !isHex(h) {
						return nil, false, errSyntax
					}
				}
				i += 6
			default:
				return nil, false, errSyntax
			}
		case c < 0x20:
			return nil, false, errSyntax
		default:
			seen |= uint64(c)
			i++ // the last bytes, fewer than eight, one at a time
		}
	}
}

// stopAt returns the bytes of w (eight string bytes, little-endian) that
// rawString must stop at, each as its bit 7: a quote, a backslash or a
// byte below 0x20. A set bit above a stop byte may be false (a borrow
// carries into the next byte), so only the lowest one counts: it is
// always a stop byte.
func stopAt(w uint64) uint64 {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	q := w ^ ('"' * lo)
	s := w ^ ('\\' * lo)
	// A byte x is 0 iff (x - 1) borrows into bit 7 while x has bit 7
	// clear; x < 0x20 iff (x - 0x20) does.
	return ((q-lo)&^q | (s-lo)&^s | (w-0x20*lo)&^w) & hi
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// str decodes a string value.
func (d *decoder) str() (string, error) { return d.strKeep(false) }

// text decodes a text body (message text and thinking, string content,
// bash command and output, a summary): as str, but a lone surrogate escape
// stays that code point (wtf8.go) instead of becoming U+FFFD.
func (d *decoder) text() (string, error) { return d.strKeep(true) }

func (d *decoder) strKeep(keep bool) (string, error) {
	raw, esc, err := d.rawString()
	if err != nil {
		return "", err
	}
	if d.scratch != nil {
		return d.transient(raw, esc, keep), nil
	}
	if !esc && d.ascii {
		return string(raw), nil
	}
	return unquote(raw, esc, keep), nil
}

// body decodes a text body for a transient parse (Parser.Scratch): its
// bytes alias the line, valid until the next line is parsed. A body with
// escapes is decoded in place, over its own raw bytes in the line: a
// decoded body is never longer than its raw form (an escape of 2, 6 or 12
// bytes gives 1 to 4) unless the raw form holds invalid UTF-8 (a byte
// becomes U+FFFD's three), so each decoded byte is written at or before
// the raw byte it comes from, after that byte was read, and the line past
// the body's closing quote is left as it was. A body with invalid UTF-8
// is decoded into the scratch's reused body buffer instead. No string is
// made and nothing is allocated: the indexer copies the body to its item
// text file (docs/benchmarks.md: a string per body doubled what indexing
// allocated).
func (d *decoder) body() ([]byte, error) {
	return d.decodeBody(true)
}

// bodyOf is body for a string already crossed (raw, esc and ascii as
// rawString gives them); inPlace false decodes a body with escapes into
// the body buffer, leaving the line as it is (a content part whose JSON
// is kept as written, Part.Raw).
func (d *decoder) bodyOf(raw []byte, esc, ascii, inPlace bool) []byte {
	valid := ascii || utf8.Valid(raw)
	switch {
	case !esc && valid:
		return raw
	case valid && inPlace:
		return appendUnquoted(raw[:0], raw, true, true)
	}
	c := d.scratch
	n := len(c.bodies)
	// Grown once (the decoded length is at most 3*len(raw)): growing by
	// append's doubling allocated twice a huge body.
	c.bodies = appendUnquoted(Grow(c.bodies, 3*len(raw)), raw, true, valid)
	// Capped: nothing appends into the bytes of the next body.
	return c.bodies[n:len(c.bodies):len(c.bodies)]
}

// transient is unquote for transient decoding: the string's bytes are
// carved from *d.scratch.
func (d *decoder) transient(raw []byte, esc, keep bool) string {
	if len(raw) == 0 {
		return ""
	}
	if !esc && (d.ascii || utf8.Valid(raw)) {
		return d.scratch.copy(raw)
	}
	return d.scratch.unquote(raw, keep)
}

// StringChunks is the memory of a transient parse (Parser.Scratch).
//
// The strings it decodes (ids, roles, names, timestamps: the text bodies
// go to bodies instead) are carved from one strings.Builder at a time,
// grown once to chunkBytes: WriteString and Write append within its
// capacity and never move or rewrite the bytes written before, so every
// substring of its String stays valid and unchanged (strings.Builder's
// contract) while later copies go on. A chunk is dropped by the collector
// once no string carved from it is left: one allocation per chunkBytes of
// strings instead of one per string.
//
// bodies holds the current line's text bodies that could not be decoded
// in place (decoder.body: invalid UTF-8) and is where a string with
// escapes is decoded before it is carved; it is reused from line to line
// (decodeLine resets it), so it costs no allocation once grown.
//
// The first chunk is small (firstChunk) and each next one twice the last,
// up to chunkBytes: a sync of one appended line carves a few hundred
// bytes, and a 64 KiB chunk for them was half the garbage of a catch-up.
//
// The zero value is ready to use; one StringChunks serves one parse at a
// time.
type StringChunks struct {
	b      *strings.Builder
	bodies []byte
	size   int // the size of the last chunk (0: none yet)
}

// firstChunk is the size of a StringChunks' first chunk.
const firstChunk = 4 << 10

// maxKeptBodies is the largest body buffer a StringChunks keeps from one
// line to the next: a huge tool result's is dropped, not held.
const maxKeptBodies = 1 << 20

// nextLine makes c's body buffer free for the next line's bodies.
func (c *StringChunks) nextLine() {
	if cap(c.bodies) > maxKeptBodies {
		c.bodies = nil
	}
	c.bodies = c.bodies[:0]
}

// copy returns b as a string carved from c (of its own allocation when
// longer than a quarter chunk).
func (c *StringChunks) copy(b []byte) string {
	if len(b) > chunkBytes/4 {
		return string(b)
	}
	c.room(len(b))
	n := c.b.Len()
	c.b.Write(b)
	return c.b.String()[n:]
}

// unquote is the package's unquote of a string body with escapes, its
// bytes decoded into c; keep as for unquote. The bytes are decoded past
// the end of the body buffer first, then carved (the buffer's length is
// left as it was).
func (c *StringChunks) unquote(raw []byte, keep bool) string {
	n := len(c.bodies)
	c.bodies = appendUnquoted(Grow(c.bodies, len(raw)), raw, keep, false)
	s := c.copy(c.bodies[n:])
	c.bodies = c.bodies[:n]
	return s
}

// room makes c's Builder one with n bytes free.
func (c *StringChunks) room(n int) {
	if c.b == nil || c.b.Cap()-c.b.Len() < n {
		c.size = min(max(2*c.size, firstChunk), chunkBytes)
		c.b = new(strings.Builder)
		c.b.Grow(max(c.size, n))
	}
}

// unquote decodes a validated string body (encoding/json rules: invalid
// UTF-8 bytes and lone surrogates become U+FFFD; with keep, a lone
// surrogate escape stays that code point, in WTF-8).
func unquote(raw []byte, esc, keep bool) string {
	if !esc && utf8.Valid(raw) {
		return string(raw)
	}
	// len(raw) is the decoded length but for invalid UTF-8.
	return string(appendUnquoted(make([]byte, 0, len(raw)), raw, keep, false))
}

// appendUnquoted appends the decoded bytes of a validated string body to
// out; keep: a lone surrogate escape is written as its WTF-8 bytes;
// valid: raw is known to be valid UTF-8 (its runs are not checked again).
func appendUnquoted(out, raw []byte, keep, valid bool) []byte {
	for i := 0; i < len(raw); {
		// Copy the run up to the next backslash in one go.
		k := bytes.IndexByte(raw[i:], '\\')
		if k < 0 {
			k = len(raw) - i
		}
		if k > 0 {
			run := raw[i : i+k]
			if valid || utf8.Valid(run) {
				out = append(out, run...)
			} else {
				out = appendFixUTF8(out, run)
			}
			i += k
			continue
		}
		switch raw[i+1] {
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
			r := hex4(raw[i+2 : i+6])
			i += 6
			if utf16.IsSurrogate(r) {
				if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					r2 := hex4(raw[i+2 : i+6])
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						out = utf8.AppendRune(out, dec)
						i += 6
						continue
					}
				}
				if keep {
					out = appendSurrogate(out, r)
					continue
				}
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
			continue
		default: // '"', '\\', '/'
			out = append(out, raw[i+1])
		}
		i += 2
	}
	return out
}

// appendFixUTF8 appends run to out with each invalid UTF-8 byte replaced
// by U+FFFD (encoding/json's rule).
func appendFixUTF8(out, run []byte) []byte {
	for i := 0; i < len(run); {
		r, size := utf8.DecodeRune(run[i:])
		if r == utf8.RuneError && size == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, run[i:i+size]...)
		}
		i += size
	}
	return out
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		default:
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}

// maxDepth bounds nesting (encoding/json allows 10,000).
const maxDepth = 10000

// skip validates and crosses one value, returning its raw bytes.
func (d *decoder) skip() ([]byte, error) {
	d.ws()
	start := d.i
	if err := d.skipValue(0); err != nil {
		return nil, err
	}
	return d.b[start:d.i], nil
}

func (d *decoder) skipValue(depth int) error {
	if depth > maxDepth {
		return errSyntax
	}
	switch c := d.peek(); {
	case c == '"':
		_, _, err := d.rawString()
		return err
	case c == '{':
		return d.object(depth, func([]byte) error { return d.skipValue(depth + 1) })
	case c == '[':
		d.i++
		if d.peek() == ']' {
			d.i++
			return nil
		}
		for {
			if err := d.skipValue(depth + 1); err != nil {
				return err
			}
			if done, err := d.arrayNext(); done || err != nil {
				return err
			}
		}
	case c == 't':
		return d.lit("true")
	case c == 'f':
		return d.lit("false")
	case c == 'n':
		return d.lit("null")
	case c == '-' || (c >= '0' && c <= '9'):
		_, err := d.number()
		return err
	}
	return errSyntax
}

// arrayNext steps over what follows an array element: a ',' (more
// elements follow: false) or the closing ']' (true); anything else is
// errSyntax.
func (d *decoder) arrayNext() (bool, error) {
	switch d.peek() {
	case ',':
		d.i++
		return false, nil
	case ']':
		d.i++
		return true, nil
	}
	return false, errSyntax
}

// lit crosses the literal s (true, false, null).
func (d *decoder) lit(s string) error {
	if !bytes.HasPrefix(d.b[d.i:], []byte(s)) {
		return errSyntax
	}
	d.i += len(s)
	return nil
}

// number crosses a JSON number and returns its text.
func (d *decoder) number() ([]byte, error) {
	start := d.i
	b := d.b
	i := d.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return nil, errSyntax
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return nil, errSyntax
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return nil, errSyntax
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	d.i = i
	return b[start:i], nil
}

// object iterates the members of an object value, calling fn with each
// key (unescaped; only valid during the call); fn must consume the value
// with one of the typed readers or skip. Keys match case-sensitively, as
// JavaScript property access does.
func (d *decoder) object(depth int, fn func(key []byte) error) error {
	if depth > maxDepth || d.peek() != '{' {
		return errSyntax
	}
	d.i++
	if d.peek() == '}' {
		d.i++
		return nil
	}
	for {
		if d.peek() != '"' {
			return errSyntax
		}
		raw, esc, err := d.rawString()
		if err != nil {
			return err
		}
		key := raw
		if esc {
			key = []byte(unquote(raw, true, false))
		}
		if d.peek() != ':' {
			return errSyntax
		}
		d.i++
		d.ws()
		if err := fn(key); err != nil {
			return err
		}
		switch d.peek() {
		case ',':
			d.i++
		case '}':
			d.i++
			return nil
		default:
			return errSyntax
		}
	}
}

// optStr reads a string value; any other value is validated, skipped and
// reported as absent (Pi keeps entries whose fields have unexpected types).
func (d *decoder) optStr() (string, bool, error) {
	if d.peek() != '"' {
		_, err := d.skip()
		return "", false, err
	}
	s, err := d.str()
	return s, err == nil, err
}

// optText is optStr for a text body (decoder.text).
func (d *decoder) optText() (string, bool, error) {
	if d.peek() != '"' {
		_, err := d.skip()
		return "", false, err
	}
	s, err := d.text()
	return s, err == nil, err
}

// optBody is optText for a transient parse (decoder.body): nil for a
// value that is not a string.
func (d *decoder) optBody() ([]byte, error) {
	if d.peek() != '"' {
		_, err := d.skip()
		return nil, err
	}
	return d.body()
}

// optBool reads true/false; anything else is skipped as false.
func (d *decoder) optBool() (bool, error) {
	switch d.peek() {
	case 't':
		return true, d.lit("true")
	case 'f':
		return false, d.lit("false")
	}
	_, err := d.skip()
	return false, err
}

// optNum reads a number; anything else is skipped as absent.
func (d *decoder) optNum() (float64, bool, error) {
	c := d.peek()
	if c != '-' && (c < '0' || c > '9') {
		_, err := d.skip()
		return 0, false, err
	}
	raw, err := d.number()
	if err != nil {
		return 0, false, err
	}
	f, perr := strconv.ParseFloat(string(raw), 64)
	if perr != nil {
		// Out of range for float64: valid JSON, but encoding/json refuses
		// to store it in a number field; keep the entry without it.
		return 0, false, nil
	}
	return f, true, nil
}

// end checks that only whitespace follows the top-level value.
func (d *decoder) end() error {
	d.ws()
	if d.i != len(d.b) {
		return errSyntax
	}
	return nil
}
