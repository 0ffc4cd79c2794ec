package session

import (
	"maps"
	"slices"
)

// The memory of a Tree's entries, kept out of the garbage collector's
// marking (docs/benchmarks.md: GC under 15% of the CPU at every size). A
// 1 GiB session holds a quarter-million entries; held as []Entry, each
// with nine pointer words, every GC cycle while the indexer ran near the
// memory limit marked all of them again (about 45 ms of CPU per cycle, a
// quarter of the whole index's CPU).
//
// So a Tree keeps its entries as rows without pointers: numbers, flags,
// and spans of the tree's arena (arena.go) for the strings. An array of
// rows is one allocation the collector never scans, and nothing in it can
// dangle: a span is an index, not an address. Entry(seq) builds the Entry
// value of a row (its strings are substrings of the arena's chunks: no
// copy). The fields of the rarer entry types (EntryRefs) and window
// markers are kept in side tables of ordinary memory, a row holding their
// index; few entries have them.
//
// Adding a field to Entry: a field of entryRow, a line in entryTable.add
// and one in entryTable.entry. TestEntryFieldsRoundTrip fails until all
// three are done.

// entryRow is one entry of a Tree: Entry without Seq (its index) and
// without pointers.
type entryRow struct {
	offset, line, length int64
	id, parentID, typ    span
	timestamp            span
	customType, role     span
	stopReason           span
	// refs and window are 1 + the index of the entry's EntryRefs in
	// entryTable.refs and of its WindowMarker in entryTable.windows; 0:
	// none.
	refs, window int32
	edit         EditKind
	flags        uint8 // flagFromHook | flagEmptySummary | flagSystemMessage
}

// Bits of entryRow.flags.
const (
	flagFromHook = 1 << iota
	flagEmptySummary
	flagSystemMessage
)

// entryTable holds a Tree's entries: rows in file order, the arena of
// their strings and the side tables.
type entryTable struct {
	rows []entryRow
	strs arena
	// words are the spans of the type, role, stop reason and custom type
	// strings already in strs (a small vocabulary, each kept once), at
	// most maxInterned of them.
	words   map[string]span
	refs    []EntryRefs
	windows []WindowMarker
}

// len is the number of entries.
func (x *entryTable) len() int { return len(x.rows) }

// id is the ID of the entry at seq.
func (x *entryTable) id(seq int) string { return x.strs.get(x.rows[seq].id) }

// word returns the span of a vocabulary string, put once.
func (x *entryTable) word(s string) span {
	if s == "" {
		return span{}
	}
	if sp, ok := x.words[s]; ok {
		return sp
	}
	sp := x.strs.put(s)
	if len(x.words) < maxInterned {
		if x.words == nil {
			x.words = map[string]span{}
		}
		x.words[x.strs.get(sp)] = sp
	}
	return sp
}

// add appends e as entry len(); parent is the Seq of the entry its
// ParentID resolved to (its id is shared), or -1.
func (x *entryTable) add(e *Entry, parent int) {
	r := entryRow{
		offset: e.Offset, line: int64(e.Line), length: int64(e.Length),
		id: x.strs.put(e.ID), typ: x.word(e.Type), timestamp: x.strs.put(e.Timestamp),
		customType: x.word(e.CustomType), role: x.word(e.Role), stopReason: x.word(e.StopReason),
		edit: e.Edit,
	}
	if parent >= 0 {
		r.parentID = x.rows[parent].id
	} else {
		r.parentID = x.strs.put(e.ParentID)
	}
	if e.FromHook {
		r.flags |= flagFromHook
	}
	if e.EmptySummary {
		r.flags |= flagEmptySummary
	}
	if e.SystemMessage {
		r.flags |= flagSystemMessage
	}
	if e.Refs != nil {
		x.refs = append(x.refs, *e.Refs)
		r.refs = int32(len(x.refs))
	}
	if e.Window != nil {
		x.windows = append(x.windows, *e.Window)
		r.window = int32(len(x.windows))
	}
	x.rows = append(x.rows, r)
}

// entry returns the Entry at seq. Its Refs and Window point into the
// table's side tables: read only.
func (x *entryTable) entry(seq int) Entry {
	r := &x.rows[seq]
	e := Entry{
		Seq: seq, Line: int(r.line), Offset: r.offset, Length: int(r.length),
		ID: x.strs.get(r.id), ParentID: x.strs.get(r.parentID), Type: x.strs.get(r.typ),
		Timestamp: x.strs.get(r.timestamp), CustomType: x.strs.get(r.customType),
		Role: x.strs.get(r.role), StopReason: x.strs.get(r.stopReason),
		FromHook: r.flags&flagFromHook != 0, EmptySummary: r.flags&flagEmptySummary != 0,
		SystemMessage: r.flags&flagSystemMessage != 0, Edit: r.edit,
	}
	if r.refs != 0 {
		e.Refs = &x.refs[r.refs-1]
	}
	if r.window != 0 {
		e.Window = &x.windows[r.window-1]
	}
	return e
}

// own makes x, a copy of another tree's table (Tree.Reuse), one that may
// be appended to without writing into memory the other tree reads: the
// side tables and the arena's chunk list are copied on their next append,
// the vocabulary map now. The rows are not: the other tree never reads
// past its own length.
func (x *entryTable) own() {
	x.strs.own()
	x.words = maps.Clone(x.words)
	x.refs, x.windows = slices.Clip(x.refs), slices.Clip(x.windows)
}
