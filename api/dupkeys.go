package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Duplicate member names in a request body.
//
// RFC 8259 §4 says the names within an object SHOULD be unique and that
// when they are not, receivers differ in what they do; encoding/json keeps
// the last one, so {"path":"a.md","path":"b.md"} would act on b.md while a
// reader of the body (a log, a proxy, the person who wrote it) may take
// a.md. contextd refuses such a body with 422, naming the name and where
// it is, instead of choosing for the caller. The check runs once per body,
// after encoding/json accepted it (strictJSON), as one pass over the bytes
// (dupkeys_test.go BenchmarkDuplicateKeyCheck measures it against the
// decode).

// dupKeyPrefix starts the message of a duplicate name; errors.go turns the
// 400 huma gives a body its decoder refused into 422 for it, as the body is
// well-formed JSON whose content is refused.
const dupKeyPrefix = "duplicate member name "

// dupKeyError is a duplicate member name: Name (unescaped) at Location
// ("body.context.session_id", huma's location syntax: "body", then
// ".name" per object member and "[i]" per array element).
type dupKeyError struct {
	Name, Location string
}

func (e *dupKeyError) Error() string {
	return fmt.Sprintf("%s%q at %s: each name may appear once in an object; send it once, with the value you mean", dupKeyPrefix, clip(e.Name), clip(e.Location))
}

// findDuplicateKey returns the first duplicate member name of the JSON
// text data, in document order, or nil. data must be valid JSON
// (encoding/json accepted it, so nesting is at most 10,000 deep). Names
// are compared after unescaping ("a" and "\u0061" are one name), byte for
// byte (encoding/json's case-insensitive field match is not applied: a
// name that differs in case is refused by the schema as unknown).
func findDuplicateKey(data []byte) *dupKeyError {
	s := dupScanner{b: data}
	s.ws()
	return s.value()
}

// dupScanner walks valid JSON. path holds the members and elements from
// the root to the current value, for the error's location.
type dupScanner struct {
	b    []byte
	i    int
	path []dupSeg
}

// dupSeg is one step of a location: a member's raw name (escapes kept) or
// an array index.
type dupSeg struct {
	name  []byte
	index int
}

func (s *dupScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// str skips the string starting at s.i (a quote) and returns its content,
// escapes kept, and whether it holds an escape.
func (s *dupScanner) str() (raw []byte, escaped bool) {
	start := s.i + 1
	j := start
	for {
		k := bytes.IndexByte(s.b[j:], '"')
		if k < 0 { // not valid JSON; cannot happen after encoding/json
			s.i = len(s.b)
			return s.b[start:], escaped
		}
		j += k
		n := 0
		for p := j - 1; p >= start && s.b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			break
		}
		j++
	}
	raw = s.b[start:j]
	s.i = j + 1
	return raw, bytes.IndexByte(raw, '\\') >= 0
}

// value walks one value at s.i (after whitespace) and returns the first
// duplicate inside it.
func (s *dupScanner) value() *dupKeyError {
	if s.i >= len(s.b) {
		return nil
	}
	switch s.b[s.i] {
	case '{':
		return s.object()
	case '[':
		s.i++
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == ']' {
			s.i++
			return nil
		}
		for idx := 0; ; idx++ {
			s.ws()
			s.path = append(s.path, dupSeg{index: idx})
			if e := s.value(); e != nil {
				return e
			}
			s.path = s.path[:len(s.path)-1]
			s.ws()
			if s.i >= len(s.b) || s.b[s.i] != ',' {
				s.i++ // ']'
				return nil
			}
			s.i++
		}
	case '"':
		s.str()
		return nil
	default: // number, true, false, null
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return nil
			}
			s.i++
		}
		return nil
	}
}

// smallObject is the member count up to which names are compared by a
// scan of those seen; larger objects use a map.
const smallObject = 16

func (s *dupScanner) object() *dupKeyError {
	s.i++ // '{'
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return nil
	}
	var small [smallObject][]byte
	seen := small[:0]
	var many map[string]struct{}
	for {
		s.ws()
		raw, escaped := s.str()
		name := raw
		if escaped {
			name = unescapeName(raw)
		}
		dup := false
		if many != nil {
			_, dup = many[string(name)]
			if !dup {
				many[string(name)] = struct{}{}
			}
		} else {
			for _, n := range seen {
				if bytes.Equal(n, name) {
					dup = true
					break
				}
			}
			if !dup {
				seen = append(seen, name)
				if len(seen) > smallObject {
					many = make(map[string]struct{}, 2*len(seen))
					for _, n := range seen {
						many[string(n)] = struct{}{}
					}
				}
			}
		}
		s.path = append(s.path, dupSeg{name: raw})
		if dup {
			return &dupKeyError{Name: string(name), Location: s.location()}
		}
		s.ws()
		s.i++ // ':'
		s.ws()
		if e := s.value(); e != nil {
			return e
		}
		s.path = s.path[:len(s.path)-1]
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != ',' {
			s.i++ // '}'
			return nil
		}
		s.i++
	}
}

// unescapeName decodes a member name holding escapes; raw is valid JSON
// string content.
func unescapeName(raw []byte) []byte {
	var out string
	q := make([]byte, 0, len(raw)+2)
	q = append(append(append(q, '"'), raw...), '"')
	if json.Unmarshal(q, &out) != nil {
		return raw
	}
	return []byte(out)
}

// location spells s.path as huma does: body.a.b[2].c.
func (s *dupScanner) location() string {
	var b strings.Builder
	b.WriteString("body")
	for _, seg := range s.path {
		if seg.name == nil {
			b.WriteString("[" + strconv.Itoa(seg.index) + "]")
			continue
		}
		n := seg.name
		if bytes.IndexByte(n, '\\') >= 0 {
			n = unescapeName(n)
		}
		b.WriteByte('.')
		b.Write(n)
	}
	return b.String()
}
