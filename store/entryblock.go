package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"contextd/session"
)

// Entry blocks (docs/design.md, "Terms of our own"): the entries of a
// session are stored packed, one entry block per ingest batch. The
// entry_blocks table of index.db (migrations/index/0004_entry_blocks.sql)
// holds them, one row per entry block:
//
//	file_id    the session (sessions.file_id)
//	first_seq  the Seq of its first entry; a session's entry blocks, in
//	           first_seq order, follow each other with no gap
//	n          the number of entries in data
//	data       n entry records, in Seq order, nothing after them
//
// An entry record is
//
//	uvarint line, offset, length
//	string  id, parentId, type, timestamp, customType, meta
//	byte    flags (recordItem 1: history item or context edit;
//	        recordSummary 2: summary), edit kind (session.EditKind)
//	        with flag 1: string role, toolName, toolNamespace; uvarint chars
//	uvarint textOff, textLen (the item's text in the text stream,
//	        textstore.go)
//
// where a string is a uvarint byte length and the bytes, and meta is the
// entryMeta JSON (encodeMeta). A row that does not follow the one before
// it or does not hold exactly n records is errBadEntryBlock. The rows are
// derived: a change of the record needs an index migration that re-indexes
// every session (as 0004 did). One INSERT per batch replaced one per 64
// entries, whose database/sql and cgo calls were a fifth of the indexing
// time (docs/benchmarks.md), and no metadata goes through reflection.
const (
	recordItem    = 1 << 0
	recordSummary = 1 << 1
)

// errBadEntryBlock is a damaged entry_blocks row.
var errBadEntryBlock = errors.New("damaged entry block in the index")

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendEntryRecord appends e's record; nm and pending resolve the item's
// names.
func appendEntryRecord(b []byte, e *session.Entry, im *ItemMeta, nm, pending *names, meta []byte) []byte {
	b = binary.AppendUvarint(b, uint64(e.Line))
	b = binary.AppendUvarint(b, uint64(e.Offset))
	b = binary.AppendUvarint(b, uint64(e.Length))
	b = appendStr(b, e.ID)
	b = appendStr(b, e.ParentID)
	b = appendStr(b, e.Type)
	b = appendStr(b, e.Timestamp)
	b = appendStr(b, e.CustomType)
	b = binary.AppendUvarint(b, uint64(len(meta)))
	b = append(b, meta...)
	var flags byte
	item := im.IsItem || im.Edit != session.EditNone
	if item {
		flags |= recordItem
	}
	if im.Summary {
		flags |= recordSummary
	}
	b = append(b, flags, byte(im.Edit))
	if item {
		b = appendStr(b, nm.nameOr(im.Role, pending))
		b = appendStr(b, nm.nameOr(im.ToolName, pending))
		b = appendStr(b, nm.nameOr(im.ToolNamespace, pending))
		b = binary.AppendUvarint(b, uint64(uint32(im.Chars)))
	}
	b = binary.AppendUvarint(b, uint64(im.TextOff))
	return binary.AppendUvarint(b, uint64(uint32(im.TextLen)))
}

// insertEntries writes the entries of one batch as one entry_blocks row,
// its records built in buf (reused: the ingest's batches share one, a
// fresh one per batch was an eighth of a cold index's page faults); it
// returns the buffer for the next batch (the driver copies a bound blob,
// so it is free once the statement ran).
func insertEntries(ctx context.Context, tx *sql.Tx, fileID int64, pend []pendingEntry, nm, pending *names, buf []byte) ([]byte, error) {
	if len(pend) == 0 {
		return buf, nil
	}
	blob := slices.Grow(buf[:0], 96*len(pend))
	var meta []byte
	for i := range pend {
		e := &pend[i].e
		meta = encodeMeta(meta[:0], e)
		blob = appendEntryRecord(blob, e, &pend[i].item, nm, pending, meta)
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO entry_blocks(file_id, first_seq, n, data) VALUES (?,?,?,?)`, fileID, pend[0].e.Seq, len(pend), blob)
	return blob[:0], err
}

// entryBlockReader reads the records of one entry_blocks row.
type entryBlockReader struct {
	b   []byte
	err error
}

func (r *entryBlockReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errBadEntryBlock
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *entryBlockReader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = errBadEntryBlock
		return nil
	}
	s := r.b[:n]
	r.b = r.b[n:]
	return s
}

func (r *entryBlockReader) byte() byte {
	if r.err != nil {
		return 0
	}
	if len(r.b) == 0 {
		r.err = errBadEntryBlock
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// loadEntries adds the stored entries of fileID to tree, in Seq order,
// and returns their item metadata. An error of the row iteration
// (rows.Err: a cancelled context, an I/O error) or a damaged row fails the
// load, so that a session is never left half loaded.
func loadEntries(ctx context.Context, db *DB, fileID int64, tree *session.Tree, nm *names) ([]ItemMeta, error) {
	rows, err := db.Writer.QueryContext(ctx, `SELECT first_seq, n, data FROM entry_blocks WHERE file_id=? ORDER BY first_seq`, fileID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var items []ItemMeta
	for rows.Next() {
		var first, n int64
		var data []byte
		if err := rows.Scan(&first, &n, &data); err != nil {
			return nil, err
		}
		if first != int64(tree.Len()) {
			return nil, fmt.Errorf("%w: entries from seq %d follow %d entries", errBadEntryBlock, first, tree.Len())
		}
		tree.Grow(int(n))
		r := &entryBlockReader{b: data}
		for i := int64(0); i < n; i++ {
			var e session.Entry
			e.Seq = int(first + i)
			e.Line = int(r.uvarint())
			e.Offset = int64(r.uvarint())
			e.Length = int(r.uvarint())
			e.ID = string(r.bytes())
			e.ParentID = string(r.bytes())
			e.Type = session.Intern(string(r.bytes()))
			if ts := r.bytes(); e.Type == session.TypeBranchSummary {
				e.Timestamp = string(ts) // the only timestamps kept in memory (memEntry)
			}
			e.CustomType = session.Intern(string(r.bytes()))
			meta := r.bytes()
			flags, edit := r.byte(), session.EditKind(r.byte())
			var im ItemMeta
			if flags&recordItem != 0 {
				var pend names
				im = ItemMeta{IsItem: edit == session.EditNone, Summary: flags&recordSummary != 0, Edit: edit,
					Role: nm.id(string(r.bytes()), &pend), ToolName: nm.id(string(r.bytes()), &pend), ToolNamespace: nm.id(string(r.bytes()), &pend)}
				im.Chars = int32(uint32(r.uvarint()))
				nm.publish(&pend)
			}
			im.TextOff = int64(r.uvarint())
			im.TextLen = int32(uint32(r.uvarint()))
			if r.err != nil {
				return nil, fmt.Errorf("%w (file %d, seq %d)", r.err, fileID, e.Seq)
			}
			if err := decodeMeta(string(meta), &e); err != nil {
				return nil, err
			}
			e.Role, e.StopReason = session.Intern(e.Role), session.Intern(e.StopReason)
			tree.Add(memEntry(e))
			items = append(items, im)
		}
		if len(r.b) != 0 {
			return nil, fmt.Errorf("%w (file %d, %d bytes after seq %d)", errBadEntryBlock, fileID, len(r.b), first+n-1)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return items, rows.Close()
}
