package session

import "unsafe"

// The memory of a Tree's entries, kept out of the garbage collector's
// marking (docs/benchmarks.md: GC under 15% of the CPU at every size). A 1 GiB
// session holds a quarter-million entries of 168 bytes with nine pointer
// words each; while the indexer runs near the memory limit, every GC cycle
// marked all of them again (about 45 ms of CPU per cycle, a quarter of the
// whole index's CPU).
//
// So a Tree allocates its Entries arrays as pointer-free memory (make of
// bytes, viewed as []Entry), which the collector never scans, and makes
// every pointer an entry holds point at memory the Tree keeps reachable
// by other means:
//   - the strings (ID, ParentID, Timestamp) are copied into the tree's
//     string chunks (pointer-free too, reachable from Tree.strs);
//   - Type, CustomType, Role and StopReason, a small vocabulary, are
//     copied there once each (Tree.words);
//   - Refs and Window, set on few entries, are listed in Tree.keep.
//
// Nothing else ever writes into a Tree's entries: Add is the only way in,
// and the Entries slice is for reading (a caller that copies an Entry out
// gets ordinary memory, which the collector scans as usual).

// entrySize is the size of one Entry.
const entrySize = unsafe.Sizeof(Entry{})

// makeEntries returns an []Entry of length n and capacity c (c ≥ n) in
// memory the garbage collector does not scan.
func makeEntries(n, c int) []Entry {
	if c == 0 {
		return nil
	}
	// A byte allocation of a multiple of 8 bytes is 8-byte aligned, as
	// Entry needs.
	b := make([]byte, uintptr(c)*entrySize)
	return unsafe.Slice((*Entry)(unsafe.Pointer(unsafe.SliceData(b))), c)[:n]
}

// growEntries returns es with room for at least n more entries, in memory
// from makeEntries: exactly n more when exact (Tree.Grow, sized by the
// caller), else with append's headroom (twice the capacity while small,
// a quarter more once large).
func growEntries(es []Entry, n int, exact bool) []Entry {
	if cap(es)-len(es) >= n {
		return es
	}
	c := len(es) + n
	if !exact {
		if cap(es) < 1024 {
			c = max(c, 2*cap(es), 64)
		} else {
			c = max(c, cap(es)+cap(es)/4)
		}
	}
	out := makeEntries(len(es), c)
	copy(out, es)
	return out
}

// strChunk is the size of the chunks a Tree copies its strings into.
const strChunk = 64 << 10

// treeMem is what keeps the targets of a Tree's entry pointers reachable.
type treeMem struct {
	strs  [][]byte          // chunks of string bytes (pointer-free)
	free  []byte            // the rest of the last chunk
	words map[string]string // Type, CustomType, Role, StopReason values, in strs
	keep  []any             // the Refs and Window of entries
	// held is a tree whose entries' memory this tree's entries point
	// into (Reuse): kept reachable for as long as this tree is.
	held *Tree
}

// str returns a copy of s in the tree's chunks.
func (m *treeMem) str(s string) string {
	if s == "" {
		return ""
	}
	if len(s) > strChunk/8 {
		b := []byte(s) // a long string: its own pointer-free allocation
		m.strs = append(m.strs, b)
		return unsafe.String(unsafe.SliceData(b), len(b))
	}
	if len(m.free) < len(s) {
		m.free = make([]byte, strChunk)
		m.strs = append(m.strs, m.free)
	}
	n := copy(m.free, s)
	out := unsafe.String(unsafe.SliceData(m.free), n)
	m.free = m.free[n:]
	return out
}

// word returns the tree's copy of a vocabulary string (entry types,
// roles, stop reasons, custom types).
func (m *treeMem) word(s string) string {
	if s == "" {
		return ""
	}
	if w, ok := m.words[s]; ok {
		return w
	}
	w := m.str(s)
	if len(m.words) < maxInterned {
		if m.words == nil {
			m.words = map[string]string{}
		}
		m.words[w] = w
	}
	return w
}

// own makes every pointer of e point at memory m keeps reachable. The
// ParentID is set by the caller when it shares the parent's ID.
func (m *treeMem) own(e *Entry, parentShared bool) {
	e.ID = m.str(e.ID)
	if !parentShared {
		e.ParentID = m.str(e.ParentID)
	}
	e.Type, e.CustomType, e.Role, e.StopReason = m.word(e.Type), m.word(e.CustomType), m.word(e.Role), m.word(e.StopReason)
	e.Timestamp = m.str(e.Timestamp)
	if e.Refs != nil {
		m.keep = append(m.keep, e.Refs)
	}
	if e.Window != nil {
		m.keep = append(m.keep, e.Window)
	}
}
