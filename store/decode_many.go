package store

import (
	"io"
	"os"
	"strings"
	"sync"

	"contextd/internal/hugemem"
	"contextd/session"
)

// DecodeEach decodes the entries at seqs (Seqs of v.Tree, any order) with
// at most one open of the session file (none when every entry is kept
// decoded) and calls fn for each, in the order given.
// fn must not modify the entry or the decoded bodies: recently decoded
// entries are kept (decodeCache) and shared by later calls.
// Errors: ErrFileChanged when the file is gone, swapped, or an entry's
// bytes no longer parse to the indexed entry; fn's error ends the walk.
func (v *View) DecodeEach(seqs []int, fn func(seq int, e *session.Entry, d *session.Decoded) error) error {
	return v.decodeEach(seqs, false, fn)
}

// DecodeEachTreeOnly is DecodeEach with the bodies skipped
// (session.Parser.TreeOnly): the Decoded holds only its Message (nil for
// an entry that is no message) with its role, tool call id, tool name,
// stop reason, isError, excludeFromContext and custom type: no content,
// command or output. For the fields beside a large body (a tool result's
// call id, read by the pairing of every /context after one is appended):
// crossing a 4 MiB body costs a scan, decoding it a copy of it or two.
// Recent decodes are kept (decodeCache, treeOnly) and shared: fn must not
// modify them.
func (v *View) DecodeEachTreeOnly(seqs []int, fn func(seq int, e *session.Entry, d *session.Decoded) error) error {
	return v.decodeEach(seqs, true, fn)
}

func (v *View) decodeEach(seqs []int, treeOnly bool, fn func(seq int, e *session.Entry, d *session.Decoded) error) error {
	if len(seqs) == 0 {
		return nil
	}
	var f *os.File // opened at the first entry not kept decoded
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	h := v.Tree.Header
	dc := &v.s.decoded
	if treeOnly {
		dc = &v.s.treeDecoded
	}
	var buf []byte // treeOnly: one buffer for every line
	for _, seq := range seqs {
		e := v.Tree.Entry(seq)
		if c, ok := dc.get(seq, &e); ok {
			if err := fn(seq, c.e, c.d); err != nil {
				return err
			}
			continue
		}
		if !treeOnly {
			buf = nil
		}
		if f == nil {
			var err error
			if f, err = v.s.x.openForRead(v.Path); err != nil {
				return ErrFileChanged
			}
		}
		got, d, err := decodeLine(f, &e, &h, treeOnly, &buf)
		if err != nil {
			return err
		}
		dc.put(seq, &e, decodedEntry{e: got, d: d}, treeOnly)
		if err := fn(seq, got, d); err != nil {
			return err
		}
	}
	return nil
}

// decodeLine reads and parses the line of the indexed entry e. A full
// decode reads into a buffer of its own (the Decoded may alias it); a
// tree-only decode keeps nothing of the line (treeOnlyCopy), so it reads
// into *buf, reused for the next line, or, for a line of
// hugemem.MinBytes or more (a tool result of megabytes, whose call id
// every /context after its append needs), into memory mapped for it with
// huge pages and unmapped before it returns: a fresh heap buffer of 5 MB
// was about 1,300 page faults, 30 ms on the bench VM, in the slowest
// request of the many-clients row (docs/benchmarks.md).
// Errors: ErrFileChanged.
func decodeLine(f io.ReaderAt, e *session.Entry, h *session.Header, treeOnly bool, buf *[]byte) (*session.Entry, *session.Decoded, error) {
	var line []byte
	switch {
	case treeOnly && e.Length >= hugemem.MinBytes:
		b, release := hugemem.Alloc(e.Length)
		defer release()
		line = b
	default:
		if cap(*buf) < e.Length {
			*buf = make([]byte, e.Length)
		}
		line = (*buf)[:e.Length]
	}
	if _, err := f.ReadAt(line, e.Offset); err != nil {
		return nil, nil, ErrFileChanged
	}
	p := session.Parser{Header: h, NextLine: e.Line, NextSeq: e.Seq, LastV1ID: e.ParentID, TreeOnly: treeOnly}
	got, d, skip := p.ParseLine(line, e.Offset)
	if skip != session.SkipNone || got == nil || got.ID != e.ID {
		return nil, nil, ErrFileChanged
	}
	if treeOnly {
		// Kept without what may alias the line (the raw JSON of details
		// and data): an Entry of its own and the message's fields that
		// are not bodies.
		got, d = treeOnlyCopy(got, d)
	}
	return got, d, nil
}

// decodeCache keeps the entries DecodeEach decoded lately, by Seq, up to
// decodeCacheBytes of their lines (an entry's line longer than an eighth
// of that is not kept). /context pairs the tool calls of the current
// window on every call (coordinator.pairMessages), which decoded the same
// few hundred assistant and tool result lines each time (docs/benchmarks.md:
// catch-up /context ≤ 1 ms). An indexed entry's bytes never change: a file
// changed in place is re-indexed whole, which empties the cache (reset),
// and each hit is checked against the entry's offset and length.
//
// The tree-only decodes (DecodeEachTreeOnly) are kept in a cache of their
// own (Session.treeDecoded, put with treeOnly): each holds no body, so
// each counts treeOnlyCost bytes whatever its line's length, and a long
// line's is kept too (a 4 MiB tool result's call id was read again from
// the file by every /context whose pair list was rebuilt).
type decodeCache struct {
	mu    sync.Mutex
	m     map[int]decodedEntry
	bytes int
}

// treeOnlyCost is what a tree-only decode counts against decodeCacheBytes
// (an Entry and a Message of a few short strings).
const treeOnlyCost = 512

type decodedEntry struct {
	e      *session.Entry
	d      *session.Decoded
	offset int64
	length int
}

const decodeCacheBytes = 4 << 20

func (c *decodeCache) get(seq int, e *session.Entry) (decodedEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	x, ok := c.m[seq]
	if !ok || x.offset != e.Offset || x.length != e.Length {
		return decodedEntry{}, false
	}
	return x, true
}

func (c *decodeCache) put(seq int, e *session.Entry, x decodedEntry, treeOnly bool) {
	cost := e.Length
	if treeOnly {
		cost = treeOnlyCost
	} else if e.Length > decodeCacheBytes/8 {
		return
	}
	x.offset, x.length = e.Offset, e.Length
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || c.bytes+cost > decodeCacheBytes {
		// Full: start again (the working set is one window's lines).
		c.m, c.bytes = map[int]decodedEntry{}, 0
	}
	if old, ok := c.m[seq]; ok {
		if treeOnly {
			c.bytes -= treeOnlyCost
		} else {
			c.bytes -= old.length
		}
	}
	c.m[seq] = x
	c.bytes += cost
}

func (c *decodeCache) clear() {
	c.mu.Lock()
	c.m, c.bytes = nil, 0
	c.mu.Unlock()
}

// treeOnlyCopy is what DecodeEachTreeOnly keeps of a tree-only parse: the
// entry, and a Decoded holding only the message's fields that are no
// body (strings of their own: nothing aliases the line's buffer).
func treeOnlyCopy(e *session.Entry, d *session.Decoded) (*session.Entry, *session.Decoded) {
	ec := *e
	out := &session.Decoded{}
	if d != nil && d.Message != nil {
		m := d.Message
		out.Message = &session.Message{Role: m.Role, StopReason: m.StopReason, ToolName: m.ToolName, ToolCallID: m.ToolCallID,
			IsError: m.IsError, ExcludeFromContext: m.ExcludeFromContext, CustomType: m.CustomType}
	}
	return &ec, out
}

// keptTreeOnly is the tree-only decode of a long line, taken from the
// ingest's own parse of it (batchWork.line) and kept once its batch is
// published: the pairing of the /context after a tool result of
// megabytes would otherwise read and scan the line again for its call id.
type keptTreeOnly struct {
	e *session.Entry
	d *session.Decoded
}

// treeOnlyFromIngest is treeOnlyCopy of an ingest's full parse of a line:
// what a tree-only parse of it returns (TestIngestKeepsTreeOnlyDecode),
// with every string cloned (the ingest's decoded strings are transient).
func treeOnlyFromIngest(e *session.Entry, d *session.Decoded) keptTreeOnly {
	ec, dc := treeOnlyCopy(e, d)
	if m := dc.Message; m != nil {
		m.Role, m.StopReason, m.ToolName, m.ToolCallID, m.CustomType = strings.Clone(m.Role), strings.Clone(m.StopReason), strings.Clone(m.ToolName), strings.Clone(m.ToolCallID), strings.Clone(m.CustomType)
	}
	return keptTreeOnly{e: ec, d: dc}
}
