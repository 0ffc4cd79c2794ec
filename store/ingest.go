package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"

	"contextd/history"
	"contextd/internal/hugemem"
	"contextd/session"
)

// encodeMeta is json.Marshal of e's entryMeta, written by hand (it runs
// once per indexed entry): the same bytes, without reflection.
func encodeMeta(buf []byte, e *session.Entry) []byte {
	buf = append(buf, '{')
	n := len(buf)
	str := func(key, v string) {
		if v == "" {
			return
		}
		if len(buf) > n {
			buf = append(buf, ',')
		}
		buf = append(buf, '"')
		buf = append(buf, key...)
		buf = append(buf, '"', ':')
		buf = appendJSONString(buf, v)
	}
	flag := func(key string, v bool) {
		if !v {
			return
		}
		if len(buf) > n {
			buf = append(buf, ',')
		}
		buf = append(buf, '"')
		buf = append(buf, key...)
		buf = append(buf, `":true`...)
	}
	str("role", e.Role)
	str("stopReason", e.StopReason)
	str("fromId", e.FromID())
	flag("fromHook", e.FromHook)
	flag("emptySummary", e.EmptySummary)
	str("firstKeptEntryId", e.FirstKeptEntryID())
	str("targetId", e.TargetID())
	str("label", e.Label())
	str("name", e.Name())
	if e.Window != nil {
		if len(buf) > n {
			buf = append(buf, ',')
		}
		w, _ := json.Marshal(e.Window)
		buf = append(append(buf, `"window":`...), w...)
	}
	if e.Edit != session.EditNone {
		if len(buf) > n {
			buf = append(buf, ',')
		}
		buf = strconv.AppendUint(append(buf, `"edit":`...), uint64(e.Edit), 10)
	}
	flag("systemMessage", e.SystemMessage)
	return append(buf, '}')
}

// appendJSONString appends v as json.Marshal encodes a string (HTML
// characters escaped too).
func appendJSONString(buf []byte, v string) []byte {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(v)
			return append(buf, b...)
		}
	}
	buf = append(buf, '"')
	buf = append(buf, v...)
	return append(buf, '"')
}

func decodeMeta(s string, e *session.Entry) error {
	var m entryMeta
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return err
	}
	e.Role, e.StopReason, e.FromHook, e.EmptySummary, e.Window = m.Role, m.StopReason, m.FromHook, m.EmptySummary, m.Window
	e.SetRefs(session.EntryRefs{FromID: m.FromID, FirstKeptEntryID: m.FirstKeptEntryID, TargetID: m.TargetID, Label: m.Label, Name: m.Name})
	e.Edit, e.SystemMessage = m.Edit, m.SystemMessage
	return nil
}

// memEntry is e as the in-memory tree keeps it: the timestamp only for a
// branch_summary (the Tree archives' hidden summaries name it); every
// entry's timestamp stays in the entries.ts column. A quarter-million
// timestamps are 8 MiB of heap for a 1 GiB session.
func memEntry(e session.Entry) session.Entry {
	if e.Type != session.TypeBranchSummary {
		e.Timestamp = ""
	}
	return e
}

// afterBatchCommit, when set (tests), runs on the syncing goroutine after
// each ingest batch is committed and published.
var afterBatchCommit func(s *Session)

// beforeBatchCheck, when set (tests), runs on the syncing goroutine after
// a batch's lines are parsed and before its change check is finished.
var beforeBatchCheck func(s *Session)

// pendingEntry is an entry parsed in the current batch.
type pendingEntry struct {
	e    session.Entry
	item ItemMeta
}

// ingest indexes the bytes [s.next, size) in batches of about BatchBytes.
// Each batch: parse and render, append item texts to the text file, then one
// transaction with the entries and the new resume state, then publish to
// readers.
func (s *Session) ingest(ctx context.Context, db *DB, f io.ReaderAt, size int64) error {
	// The frame file is created by the first ingest of its generation and
	// opened by the others at their first whole frame (lazyFile).
	tf := &lazyFile{path: s.framePath()}
	defer tf.Close()
	if s.framesCreated != tf.path {
		if _, err := tf.file(); err != nil {
			return err
		}
		s.framesCreated = tf.path
	}
	ib := getIngestBufs()
	defer putIngestBufs(ib)
	if s.frames > len(s.frameEnds) || size-s.next >= rawIngestBytes {
		// Frames written raw, compressed later (rawframes.go): after raw
		// frames not compressed yet, every frame is (the compressed ones
		// are the first frames).
		raw := s.raw
		if raw == nil {
			raw = s.textFiles().newRawFile(s.frames)
		}
		// A raw file that holds committed frames (s.raw) exists: it is
		// opened at the first whole frame written to it.
		rf := &lazyFile{path: raw.path}
		if raw != s.raw {
			if _, err := rf.file(); err != nil {
				return err
			}
		}
		defer func() {
			rf.Close()
			if s.raw != raw {
				// A new raw file no batch committed a frame of (the
				// ingest filled none, or failed first): nothing reads it.
				_ = raw.remove()
			}
		}()
		ib.raw, ib.rawFH = raw, rf
	}
	if size-s.next >= s.x.opts.BatchBytes {
		// A large ingest grows the heap by tens of MiB: ask for huge
		// pages for it (a catch-up of a few lines reads no maps).
		ib.adv = &hugemem.HeapAdvisor{}
		ib.adv.Check()
		// and keep one buffer for all its long lines (session.LongLines).
		ib.long = &session.LongLines{}
		defer ib.long.Release()
	}
	for s.next < size {
		if err := ctx.Err(); err != nil {
			return err
		}
		if s.flightScanned > size {
			s.flightScanned = s.next // cut and written again: look again
		}
		if s.flightFrom == s.next && s.flightScanned > s.next {
			// An unterminated line seen before: look for its end in the
			// new bytes only (docs/security.md).
			if ib.chunk == nil {
				ib.chunk = make([]byte, session.ReadChunk)
			}
			nl, found, err := s.lineEnd(ctx, f, size, ib)
			if err != nil || !found {
				return err
			}
			// It ends: one batch through its end indexes it (a line over
			// the limit is skipped as too_long without being held).
			s.flightFrom, s.flightScanned = 0, 0
			if _, err := s.batch(ctx, db, f, tf, nl+1, size, ib); err != nil {
				return err
			}
			s.setFlightTooLong(0)
			continue
		}
		end := s.next + s.x.opts.BatchBytes
		if end > size {
			end = size
		}
		progressed, err := s.batch(ctx, db, f, tf, end, size, ib)
		if err != nil {
			return err
		}
		if !progressed {
			// No "\n" in [next, end): the line at next is longer than the
			// batch, or in flight. Remember how far it was scanned.
			s.flightFrom, s.flightScanned = s.next, end
			if end == size {
				s.noteFlight()
				return nil
			}
		}
	}
	return nil
}

// lineEnd looks for the "\n" ending the line at s.next from s.flightScanned
// to size, 64 MiB at a time (ctx is checked between steps, so a request
// deadline cuts a huge scan and the next sync goes on from where it
// stopped). found is false when the line is still in flight. It reads
// into ib.chunk.
func (s *Session) lineEnd(ctx context.Context, f io.ReaderAt, size int64, ib *ingestBufs) (nl int64, found bool, err error) {
	const step = 64 << 20
	for s.flightScanned < size {
		if err := ctx.Err(); err != nil {
			s.noteFlight()
			return 0, false, err
		}
		to := min(s.flightScanned+step, size)
		nl, found, err := session.FindNewlineBuf(f, s.flightScanned, to, ib.chunk)
		if err != nil || found {
			return nl, found, err
		}
		s.flightScanned = to
	}
	s.noteFlight()
	return 0, false, nil
}

// noteFlight publishes the length of the in-flight line when it is over the
// line limit (it will be skipped as too_long when it ends).
func (s *Session) noteFlight() {
	n := s.flightScanned - s.flightFrom
	if n <= int64(s.x.opts.MaxLineBytes) {
		n = 0
	}
	s.setFlightTooLong(n)
}

func (s *Session) setFlightTooLong(n int64) {
	s.mu.Lock()
	s.flightTooLong = n
	s.publishLocked()
	s.mu.Unlock()
}

// batch indexes the complete lines of [s.next, end) (size is the file
// size): parse and render them (batchWork.line), write their item texts,
// commit their rows with the resume state, publish. It reports false when
// no line ended before end.
func (s *Session) batch(ctx context.Context, db *DB, f io.ReaderAt, tf *lazyFile, end, size int64, ib *ingestBufs) (bool, error) {
	b := s.newBatch(tf, end, ib)
	// The scratch's chunk serves the next batch.
	defer func() {
		ib.scratch = b.scratch
		// The entries array serves the next batch too (one per batch
		// was 54 MiB of garbage indexing 1 GiB).
		clear(b.pend)
		ib.pend = b.pend[:0]
		ib.blob = b.blob
	}()
	start := s.next
	if end-start >= session.ReadChunk && ib.chunk == nil {
		ib.chunk = make([]byte, session.ReadChunk)
	}
	// The change check is taken from the bytes parsed, not from a second
	// read: a rewrite between the two would leave the old text indexed
	// under the new bytes' check, never detected.
	ck := newBatchCheck(s.check.crc, start, ib, &s.checked)
	next, err := session.ScanLinesLong(f, start, end, s.x.opts.MaxLineBytes, ib.chunk, ib.long, func(line []byte, off int64, tooLong bool) error {
		if err := ck.line(f, line, off, tooLong); err != nil {
			return err
		}
		if ib.adv != nil {
			if ib.parsed += len(line); ib.parsed >= adviseEvery {
				ib.parsed = 0
				ib.adv.Check()
			}
		}
		return b.line(line, off, tooLong)
	})
	if err != nil {
		return false, err
	}
	if next == start {
		return false, nil
	}
	if beforeBatchCheck != nil {
		beforeBatchCheck(s)
	}
	check, err := ck.finish(f, s.check, next)
	ib.tail = ck.tail[:0]
	if err != nil {
		return false, err
	}
	if start == 0 && b.haveFirst {
		copy(s.firstLine[:], b.first[:])
	}
	// 1. item texts, before the rows that point at them: the frames are
	// written, their index entries now.
	if err := b.texts.finish(); err != nil {
		return false, fmt.Errorf("write item texts: %w", err)
	}
	if err := s.writeFrameIndex(len(s.frameEnds), b.texts.ends); err != nil {
		return false, fmt.Errorf("write item texts: %w", err)
	}
	newTextSize := b.textOff + b.texts.n
	// 2. rows and resume state in one transaction.
	merged := mergeStats(s.stats, b.stats)
	if err := s.commitBatch(ctx, db, b, next, newTextSize, merged, check); err != nil {
		return false, err
	}
	s.check = check
	// 3. publish. The search filters of the new frames are built once the
	// sync ends (syncLocked kicks the builder), not beside the next batch:
	// on two cores the builder took the core the text compression and the
	// rest of the machine need, and the first /context and history answer
	// wait for the whole sync (framefilter.go).
	s.publishBatch(b, next, size, newTextSize, merged)
	for _, k := range b.treeOnly {
		s.treeDecoded.put(k.e.Seq, k.e, decodedEntry{e: k.e, d: k.d}, true)
	}
	if afterBatchCommit != nil {
		afterBatchCommit(s)
	}

	m := s.x.metrics
	m.BytesIngested.Add(float64(next - start))
	m.EntriesIngested.Add(float64(len(b.pend)))
	for r, n := range b.stats.Skipped {
		m.SkippedLines.WithLabelValues(string(r)).Add(float64(n))
	}
	return true, nil
}

// batchWork is one ingest batch being parsed: a copy of the parser state
// (committed only with the batch), the entries parsed and rendered so far,
// their item texts (streamed into the text file at its committed end; the
// rows that point at them commit afterwards, so a crash leaves only frames
// that load truncates away; the tail commits with the rows), the tool calls and names they add.
type batchWork struct {
	s         *Session
	p         session.Parser
	hdr       *session.Header // the header, when this batch parsed it
	pend      []pendingEntry
	texts     *frameWriter
	textOff   int64
	newCalls  map[string]history.Call
	calls     []history.CallRecord
	lineCalls []history.CallRecord // the current line's calls (history.AppendCalls)
	newNames  names
	stats     session.Stats
	first     [32]byte // hash of the file's first line, when this batch read it
	haveFirst bool
	scratch   session.StringChunks // the parser's Scratch: each line's decoded strings
	treeOnly  []keptTreeOnly       // tree-only decodes of the batch's long lines, kept once published
	render    *bytes.Buffer        // ingestBufs.render
	blob      []byte               // ingestBufs.blob
}

// ingestBufs are the buffers one ingest call reuses for all its batches
// (each batch allocated its own: a fifth of the bytes allocated while
// indexing); they are garbage once the call returns.
type ingestBufs struct {
	chunk   []byte               // the line scanner's reads
	long    *session.LongLines   // the line scanner's long lines, kept for a large ingest (nil: each its own)
	tail    []byte               // the change check's tail window (batchCheck)
	text    *frameWriter         // item texts
	scratch session.StringChunks // the parser's Scratch
	render  bytes.Buffer         // assembled item texts (history.RenderTo), one at a time
	pend    []pendingEntry
	blob    []byte // the entry_blocks record of a batch (insertEntries)
	// raw is the raw file the frames are written to, open as rawFH (nil:
	// frames are compressed as they fill; rawframes.go).
	raw   *rawFile
	rawFH *lazyFile
	// adv marks the heap for huge pages as it grows (a large ingest
	// only; nil otherwise), checked every adviseEvery bytes parsed.
	adv    *hugemem.HeapAdvisor
	parsed int
}

// ingestPool holds the ingestBufs of ingests that ended holding at most
// maxPooledIngest bytes of buffers: the sync of an appended line made its
// frame buffer (the committed tail, up to a frame), parser scratch,
// entries array and change-check tail anew each time, most of its garbage.
var ingestPool sync.Pool

// maxPooledIngest bounds the bytes of the buffers a pooled ingestBufs
// keeps, maxPooledEntries its entries array.
const (
	maxPooledIngest  = 1 << 20
	maxPooledEntries = 1024
)

// getIngestBufs returns a pooled ingestBufs, or a new one.
func getIngestBufs() *ingestBufs {
	if ib, ok := ingestPool.Get().(*ingestBufs); ok {
		return ib
	}
	return &ingestBufs{}
}

// putIngestBufs pools ib when recycle allows it.
func putIngestBufs(ib *ingestBufs) {
	if ib.recycle() {
		ingestPool.Put(ib)
	}
}

// recycle drops what ties ib to the ingest that used it (its raw file
// and descriptor, the frame files, the heap advisor, the long-line
// buffers) and reports whether the buffers it keeps, emptied, hold at
// most maxPooledIngest bytes and maxPooledEntries entries (a large
// ingest's are left to the GC).
func (ib *ingestBufs) recycle() bool {
	if ib.adv != nil || ib.long != nil {
		return false // a large ingest (BatchBytes or more)
	}
	ib.raw, ib.rawFH, ib.parsed = nil, nil, 0
	held := cap(ib.chunk) + cap(ib.tail) + cap(ib.blob) + ib.render.Cap()
	if w := ib.text; w != nil {
		w.f, w.rf, w.raw = nil, nil, nil
		w.ends, w.out, w.buf = w.ends[:0], w.out[:0], w.buf[:0]
		held += cap(w.buf) + cap(w.enc) + cap(w.out) + 8*cap(w.ends)
	}
	clear(ib.pend[:cap(ib.pend)])
	ib.pend, ib.tail, ib.blob = ib.pend[:0], ib.tail[:0], ib.blob[:0]
	ib.render.Reset()
	return held <= maxPooledIngest && cap(ib.pend) <= maxPooledEntries
}

// adviseEvery is how many bytes a large ingest parses between two checks
// of the heap's growth (hugemem.HeapAdvisor): the heap grows by about a
// third of the bytes parsed, so by well under a huge page between checks.
const adviseEvery = 256 << 10

func (s *Session) newBatch(tf *lazyFile, end int64, ib *ingestBufs) *batchWork {
	b := &batchWork{s: s, p: s.parser, textOff: s.textSize, newCalls: map[string]history.Call{}}
	if b.p.Header != nil {
		h := *b.p.Header
		b.p.Header = &h
	}
	// Size the batch's entries once, from the entries per byte so far
	// (growing by append allocated a fifth of the ingest's garbage).
	if s.tree != nil && s.next > 0 {
		want := int(float64(end-s.next)*float64(s.tree.Len())/float64(s.next)*1.1) + 16
		if cap(ib.pend) >= want {
			b.pend = ib.pend[:0]
		} else {
			b.pend = make([]pendingEntry, 0, want)
		}
	}
	// Item texts: the committed tail, then this batch's texts, cut into
	// frames after the committed ones.
	if ib.text == nil {
		// The committed tail and about the batch's bytes (a catch-up of
		// one line needs far less than a frame; the buffer grows to one).
		ib.text = &frameWriter{buf: make([]byte, 0, min(frameSize, len(s.textTail)+int(min(end-s.next, frameSize))+64))}
	}
	w := ib.text
	w.f, w.end, w.ends, w.n, w.out = tf, 0, w.ends[:0], 0, w.out[:0]
	// w.rf is set only to a raw file: a nil *lazyFile in the interface
	// would not be nil, and frames would go to no file.
	w.rf, w.raw, w.nraw = nil, ib.raw, 0
	if ib.rawFH != nil {
		w.rf = ib.rawFH
	}
	if w.raw != nil {
		w.rawOff = int64(s.frames-w.raw.first) * frameSize
	}
	if n := len(s.frameEnds); n > 0 {
		w.end = s.frameEnds[n-1]
	}
	w.buf = append(w.buf[:0], s.textTail...)
	b.texts = w
	b.p.LookupSeq = b.idAt
	// Transient decoding: each line is rendered before the next is parsed;
	// what is kept (entries, calls, names) is copied.
	b.scratch = ib.scratch
	b.p.Scratch = &b.scratch
	b.render = &ib.render
	b.blob = ib.blob
	return b
}

// idAt is the parser's LookupSeq: the id of the entry at seq, indexed or
// pending.
func (b *batchWork) idAt(seq int) (string, bool) {
	t := b.s.tree
	if t != nil && seq < t.Len() {
		return t.IDAt(seq)
	}
	base := 0
	if t != nil {
		base = t.Len()
	}
	if i := seq - base; i >= 0 && i < len(b.pend) {
		return b.pend[i].e.ID, true
	}
	return "", false
}

// lookupCall finds a tool call by id, in this batch or indexed.
func (b *batchWork) lookupCall(id string) (history.Call, bool) {
	if c, ok := b.newCalls[id]; ok {
		return c, true
	}
	c, ok := b.s.calls[id]
	return c, ok
}

// line is session.ScanLines' callback: it finishes one line in file order
// (parser state, rendering, item text and tool calls).
func (b *batchWork) line(line []byte, off int64, tooLong bool) error {
	if off == 0 && line != nil {
		b.first, b.haveFirst = sha256.Sum256(line), true
	}
	s, p := b.s, &b.p
	b.stats.Lines++
	lineNo := p.NextLine
	if lineNo == 0 {
		lineNo = 1
	}
	if tooLong {
		p.NextLine = lineNo + 1
		b.stats.Note(lineNo, off, session.SkipTooLong)
		return nil
	}
	wasHeader := p.Header == nil
	e, d, skip := p.ParseLine(line, off)
	if skip != session.SkipNone {
		b.stats.Note(lineNo, off, skip)
		return nil
	}
	if e == nil {
		if wasHeader {
			b.hdr = p.Header
		}
		return nil
	}
	base := 0
	if s.tree != nil {
		base = s.tree.Len()
	}
	if err := s.x.overBudget(base+len(b.pend)+1, off, p.Header); err != nil {
		return err
	}
	var im ItemMeta
	if e.Type == session.TypeContextEdit && e.Edit != session.EditNone {
		// The replacement is rendered with the edit's own line, so that an
		// edit appended later never rewrites an earlier row (incremental =
		// cold); readers apply it (View.Refs).
		im = ItemMeta{Edit: e.Edit, TextOff: b.textOff + b.texts.n}
		if e.Edit == session.EditReplace {
			it := history.RenderReplacement(d.Replacement)
			im.ToolName, im.ToolNamespace, im.Chars, im.TextLen = s.names.id(it.ToolName, &b.newNames), s.names.id(it.ToolNamespace, &b.newNames), int32(it.Chars), int32(len(it.Text))
			if err := b.texts.write(it.Text); err != nil {
				return fmt.Errorf("write item texts: %w", err)
			}
		}
	} else if it, text, ok := history.RenderTo(b.render, e, d, b.lookupCall); ok {
		// The text is the line's own bytes, the parser's body buffer or
		// (assembled) the reused render buffer, copied to the frames at
		// once: no string of its own.
		im = ItemMeta{IsItem: true, Role: s.names.id(it.Role, &b.newNames), ToolName: s.names.id(it.ToolName, &b.newNames), ToolNamespace: s.names.id(it.ToolNamespace, &b.newNames), Summary: it.Summary, Chars: int32(it.Chars),
			TextOff: b.textOff + b.texts.n, TextLen: int32(len(text))}
		err := b.texts.writeBytes(text)
		if b.render.Cap() > 1<<20 {
			*b.render = bytes.Buffer{} // a huge text: do not hold its buffer
		}
		if err != nil {
			return fmt.Errorf("write item texts: %w", err)
		}
	}
	b.lineCalls = history.AppendCalls(b.lineCalls[:0], d)
	for _, c := range b.lineCalls {
		// Only a call with an action (flat router) or a namespace can
		// change how its result renders; keep just those.
		if c.ID != "" && (c.Action != "" || c.Namespace != "") {
			c.ID, c.Name, c.Namespace, c.Action = strings.Clone(c.ID), session.Intern(c.Name), session.Intern(c.Namespace), session.Intern(c.Action)
			b.newCalls[c.ID] = c.Call
			b.calls = append(b.calls, c)
		}
	}
	if len(line) >= hugemem.MinBytes {
		b.treeOnly = append(b.treeOnly, treeOnlyFromIngest(e, d))
	}
	b.pend = append(b.pend, pendingEntry{e: *e, item: im})
	return nil
}

// commitBatch writes the batch's rows, tool calls and the new resume state
// (bytes indexed through next, text size, parser state, stats, change
// check) in one transaction.
func (s *Session) commitBatch(ctx context.Context, db *DB, b *batchWork, next, newTextSize int64, merged session.Stats, check contentCheck) error {
	// Not cancellable: with a context that can end, database/sql watches
	// the transaction from a goroutine of its own and the driver runs
	// each statement on another while the caller waits, so the commit of
	// an appended line waited for two more goroutines to get a P (4 ms of
	// a traced 4.6 ms /context under 1-byte searches). A commit is short,
	// and the sync that runs it serves every request waiting for it.
	ctx = context.WithoutCancel(ctx)
	tx, err := db.Writer.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if b.blob, err = insertEntries(ctx, tx, s.fileID, b.pend, &s.names, &b.newNames, b.blob); err != nil {
		return err
	}
	for _, c := range b.calls {
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO tool_calls(file_id, call_id, name, namespace, action) VALUES (?,?,?,?,?)`, s.fileID, c.ID, c.Name, c.Namespace, c.Action); err != nil {
			return err
		}
	}
	p := &b.p
	hb := "{}"
	sid := ""
	if p.Header != nil {
		hb = s.headerJSON(*p.Header)
		sid = p.Header.ID
	}
	crc, tail := checkCRCs(check)
	// The change check is stored in the same statement (saveCheck's
	// columns): one UPDATE of the row per batch, not two.
	if _, err := tx.ExecContext(ctx, `UPDATE sessions SET session_id=?, header=?, not_pi=?, bytes_indexed=?, first_line=?, dev=?, ino=?, next_line=?, next_seq=?, last_v1_id=?, text_bytes=?, text_tail=?, stats=?, indexed_crc=?, tail_crc=?, mtime_ns=?, ctime_ns=? WHERE file_id=?`,
		sid, hb, p.NotPi, next, s.firstLine[:], int64(s.dev), int64(s.ino), p.NextLine, p.NextSeq, p.LastV1ID, newTextSize, b.texts.buf, statsJSON(merged), crc, tail, check.mtime, check.ctime, s.fileID); err != nil {
		return err
	}
	return tx.Commit()
}

// headerJSON is json.Marshal of h, kept from the last batch while the
// header is the same (it is parsed once per file, and each batch stored
// it encoded anew). Caller holds syncMu.
func (s *Session) headerJSON(h session.Header) string {
	if s.hdrJSON == "" || h != s.hdrKey {
		b, _ := json.Marshal(h)
		s.hdrKey, s.hdrJSON = h, string(b)
	}
	return s.hdrJSON
}

// statsJSON is json.Marshal of st: written directly when only Lines is
// set (no skipped line: the usual file), whose encoding is {"lines":N}
// (the other fields are omitempty).
func statsJSON(st session.Stats) string {
	if len(st.Skipped) == 0 && len(st.Problems) == 0 {
		return `{"lines":` + strconv.Itoa(st.Lines) + `}`
	}
	b, _ := json.Marshal(st)
	return string(b)
}

// publishBatch makes a committed batch visible to readers: the tree, item
// table, calls, names and resume state, under mu.
func (s *Session) publishBatch(b *batchWork, next, size, newTextSize int64, merged session.Stats) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.publishLocked()
	if b.hdr != nil && s.tree == nil {
		s.tree = session.NewTree(*b.hdr)
		if s.preview != nil {
			// The full index of a cold index after its tree preview: the
			// entries it parses are the preview's (unless the file
			// changed in between), so the tree is the preview's, not a
			// second one beside it (docs/benchmarks.md peak RSS; preview.go).
			s.tree.Reuse(s.preview.tree)
		}
	}
	if s.tree != nil {
		if n := s.tree.Len(); len(b.pend) > cap(s.items)-len(s.items) && size-next > s.x.opts.BatchBytes {
			// Size the in-memory tables once for the whole file, from the
			// entries per byte so far, rather than by append's growth, which
			// holds old and new arrays at once (the peak memory of indexing
			// a large file).
			want := int(float64(n+len(b.pend)) * float64(size) / float64(next) * 1.05)
			if s.x.maxEntries > 0 {
				// Never past the entry budget: a file of more is refused
				// at its budget-th entry (toolarge.go), and tables sized
				// for the whole file were 5× the memory limit.
				want = min(want, s.x.maxEntries)
			}
			if more := want - n; more > len(b.pend) {
				s.tree.Grow(more)
				s.items = session.Grow(s.items, more)
			}
		}
	}
	for i := range b.pend {
		s.tree.Add(memEntry(b.pend[i].e))
		s.items = append(s.items, b.pend[i].item)
	}
	for id, c := range b.newCalls {
		s.calls[id] = c
	}
	s.names.publish(&b.newNames)
	p := b.p
	p.LookupSeq, p.Scratch = nil, nil

	s.parser = p
	s.next = next
	s.textSize = newTextSize
	s.frameEnds = append(s.frameEnds, b.texts.ends...)
	s.frames += len(b.texts.ends) + b.texts.nraw
	if b.texts.nraw > 0 {
		s.raw = b.texts.raw
	}
	s.textTail = slices.Clone(b.texts.buf)
	s.stats = merged
}

func mergeStats(a, b session.Stats) session.Stats {
	out := session.Stats{Lines: a.Lines + b.Lines}
	for _, m := range []map[session.SkipReason]int{a.Skipped, b.Skipped} {
		for r, n := range m {
			if out.Skipped == nil {
				out.Skipped = map[session.SkipReason]int{}
			}
			out.Skipped[r] += n
		}
	}
	out.Problems = append(append([]session.Problem(nil), a.Problems...), b.Problems...)
	if len(out.Problems) > session.MaxProblems {
		out.Problems = out.Problems[:session.MaxProblems]
	}
	return out
}
