package session

import (
	"slices"
	"strings"
)

// An arena holds the strings of a Tree's entries (ids, parent ids,
// timestamps, types, roles, stop reasons, custom types) in a few large
// strings, its chunks, instead of one allocation per string; an entry
// names each of its strings by a span of a chunk. Chunks are strings, so
// their memory holds no pointers and the garbage collector marks each as
// one object without scanning it (docs/benchmarks.md: GC under 15% of the
// CPU at every size; a 1 GiB session holds a quarter-million entries).
//
// The chunk being written is a strings.Builder grown once to chunkBytes:
// WriteString appends within its capacity and never moves or rewrites the
// bytes written before, so tail (its String as of the last put) and every
// substring of it stay valid and unchanged while later puts go on
// (strings.Builder's contract; no unsafe here). When the next string does
// not fit, tail joins the finished chunks and a new Builder begins.
//
// Copies of an arena (Tree.Snapshot) may be read while the original is
// put to: a put writes only bytes past every copy's tail and elements past
// every copy's length of full, and a copy reads a span in its own tail or
// full. Only one arena of a family may be put to (see own).
type arena struct {
	full []string         // finished chunks, by chunk number
	tail string           // the chunk being written, as written so far: chunk number len(full)
	b    *strings.Builder // the chunk being written (nil: none)
}

// span names the string of bytes [off, off+n) of chunk c of an arena;
// the zero span is "".
type span struct{ c, off, n uint32 }

// chunkBytes is the size of an arena's chunks; a string longer than an
// eighth of it gets a chunk of its own.
const chunkBytes = 64 << 10

// put copies s into the arena and returns its span.
func (a *arena) put(s string) span {
	if s == "" {
		return span{}
	}
	if len(s) > chunkBytes/8 {
		a.seal()
		a.full = append(a.full, strings.Clone(s))
		return span{c: uint32(len(a.full) - 1), n: uint32(len(s))}
	}
	if a.b == nil || a.b.Cap()-a.b.Len() < len(s) {
		a.seal()
		a.b = new(strings.Builder)
		a.b.Grow(chunkBytes)
	}
	off := a.b.Len()
	a.b.WriteString(s)
	a.tail = a.b.String()
	return span{c: uint32(len(a.full)), off: uint32(off), n: uint32(len(s))}
}

// seal finishes the chunk being written, if any.
func (a *arena) seal() {
	if a.b == nil {
		return
	}
	a.full = append(a.full, a.tail)
	a.b, a.tail = nil, ""
}

// get returns the string sp names.
func (a *arena) get(sp span) string {
	if sp.n == 0 {
		return ""
	}
	c := a.tail
	if int(sp.c) < len(a.full) {
		c = a.full[sp.c]
	}
	return c[sp.off : sp.off+sp.n]
}

// eq reports whether the string sp names equals s, without building it.
func (a *arena) eq(sp span, s string) bool {
	return int(sp.n) == len(s) && a.get(sp) == s
}

// own makes a, a copy of another arena (Tree.Reuse), one that may be put
// to without writing into memory the other reads: the chunk being written
// is finished in a copy of the chunk list, and the next put begins a new
// one.
func (a *arena) own() {
	a.full = slices.Clip(a.full)
	a.seal()
}
