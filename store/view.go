package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sort"
	"time"
	"unicode/utf8"

	"contextd/history"
	"contextd/session"
)

// View is a consistent read of one session's index: the tree, the item
// table and the files, as of one moment. It is only valid inside Read.
type View struct {
	s        *Session
	Path     string
	Tree     *session.Tree // nil when no header has been indexed
	Items    []ItemMeta    // by Seq
	Stats    session.Stats
	State    FileState
	StateMsg string
	Bytes    int64 // bytes indexed (offset after the last complete line)
	FileSize int64 // file size at the last sync
	SyncedAt time.Time
}

// Read calls fn with a view of the session. Syncs wait until fn returns, so
// fn sees one state of the file and must not block for long.
func (s *Session) Read(fn func(v *View) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v := &View{s: s, Path: s.path, Tree: s.tree, Items: s.items, Stats: s.stats, State: s.state, StateMsg: s.stateMsg,
		Bytes: s.next, FileSize: s.fileSize, SyncedAt: s.syncedAt}
	if v.State == "" {
		v.State = StateOK
	}
	return fn(v)
}

// Ref returns the history item reference of the entry at seq in window
// windowID (ok false when the entry is not an item). Key is the seq.
func (v *View) Ref(seq int, windowID string) (history.ItemRef, bool) {
	im := v.Items[seq]
	if !im.IsItem {
		return history.ItemRef{}, false
	}
	e := &v.Tree.Entries[seq]
	return history.ItemRef{WindowID: windowID, ItemID: e.ID, Role: im.Role, ToolName: im.ToolName,
		ToolNamespace: im.ToolNamespace, Summary: im.Summary, Chars: im.Chars, Key: int64(seq),
		BashExecution: e.Type == session.TypeMessage && e.Role == session.RoleBashExecution}, true
}

// ErrFileChanged is returned when an entry's line is no longer where the
// index says it is (the file was rewritten after the last sync).
var ErrFileChanged = errors.New("the session file changed since it was indexed; retry the request")

// Decode reads the entry at seq from the JSONL file and decodes it.
func (v *View) Decode(seq int) (*session.Entry, *session.Decoded, error) {
	e := &v.Tree.Entries[seq]
	f, err := os.Open(v.Path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	buf := make([]byte, e.Length)
	if _, err := f.ReadAt(buf, e.Offset); err != nil {
		return nil, nil, err
	}
	h := v.Tree.Header
	p := session.Parser{Header: &h, NextLine: e.Line, NextSeq: e.Seq, LastV1ID: e.ParentID}
	got, d, skip := p.ParseLine(buf, e.Offset)
	if skip != session.SkipNone || got == nil || got.ID != e.ID {
		return nil, nil, ErrFileChanged
	}
	return got, d, nil
}

// Texts is the history.TextSource of this view: item texts are read from
// the session's item-text file.
func (v *View) Texts() history.TextSource { return viewTexts{v} }

type viewTexts struct{ v *View }

func (t viewTexts) meta(ref history.ItemRef) (ItemMeta, error) {
	if ref.Key < 0 || int(ref.Key) >= len(t.v.Items) || !t.v.Items[ref.Key].IsItem {
		return ItemMeta{}, fmt.Errorf("item %q has no text", ref.ItemID)
	}
	return t.v.Items[ref.Key], nil
}

func (t viewTexts) read(off int64, n int) ([]byte, error) {
	if n == 0 {
		return nil, nil
	}
	f, err := os.Open(t.v.s.textPath())
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, off); err != nil {
		return nil, err
	}
	return buf, nil
}

// Prefix returns the first maxChars code points of the item's text. It
// reads at most 4*maxChars bytes.
func (t viewTexts) Prefix(ref history.ItemRef, maxChars int) (string, error) {
	im, err := t.meta(ref)
	if err != nil {
		return "", err
	}
	n := im.TextLen
	if maxChars >= 0 && 4*maxChars < n {
		n = 4 * maxChars
	}
	b, err := t.read(im.TextOff, n)
	if err != nil {
		return "", err
	}
	return cutChars(b, 0, maxChars), nil
}

// Slice returns limitChars code points of the item's text starting at code
// point offsetChars.
func (t viewTexts) Slice(ref history.ItemRef, offsetChars, limitChars int) (string, error) {
	im, err := t.meta(ref)
	if err != nil {
		return "", err
	}
	// A code point takes at most 4 bytes: the range never needs more.
	n := im.TextLen
	if limitChars >= 0 && offsetChars >= 0 && 4*(offsetChars+limitChars) < n {
		n = 4 * (offsetChars + limitChars)
	}
	b, err := t.read(im.TextOff, n)
	if err != nil {
		return "", err
	}
	return cutChars(b, offsetChars, limitChars), nil
}

// cutChars returns the code points [off, off+n) of b (n < 0: to the end).
func cutChars(b []byte, off, n int) string {
	i := 0
	for c := 0; c < off && i < len(b); c++ {
		_, sz := utf8.DecodeRune(b[i:])
		i += sz
	}
	if n < 0 {
		return string(b[i:])
	}
	j := i
	for c := 0; c < n && j < len(b); c++ {
		_, sz := utf8.DecodeRune(b[j:])
		j += sz
	}
	return string(b[i:j])
}

// searchChunk is the read size of the text scan.
const searchChunk = 4 << 20

// Search calls fn, in the order of refs, for each ref whose text contains
// query as a byte substring (case-sensitive literal), until fn returns
// false. The text file region spanned by refs is scanned once in 4 MiB
// chunks with bytes.Index; a hit counts only if it lies inside one item.
func (t viewTexts) Search(query string, refs []history.ItemRef, limit int, fn func(ref history.ItemRef) bool) error {
	if len(refs) == 0 || query == "" {
		return nil
	}
	q := []byte(query)
	// Items are stored in seq order, so text offsets grow with seq.
	seqs := make([]int, 0, len(refs))
	lo, hi := int64(-1), int64(0)
	for _, r := range refs {
		im, err := t.meta(r)
		if err != nil {
			continue
		}
		seqs = append(seqs, int(r.Key))
		if lo < 0 || im.TextOff < lo {
			lo = im.TextOff
		}
		if end := im.TextOff + int64(im.TextLen); end > hi {
			hi = end
		}
	}
	if lo < 0 {
		return nil
	}
	sort.Ints(seqs)
	wanted := make(map[int]bool, len(seqs))
	for _, s := range seqs {
		wanted[s] = false
	}
	items := t.v.Items
	// owner finds the item (among all items) whose text contains offset p.
	owner := func(p int64) int {
		i := sort.Search(len(seqs), func(i int) bool {
			im := items[seqs[i]]
			return im.TextOff+int64(im.TextLen) > p
		})
		if i < len(seqs) && items[seqs[i]].TextOff <= p {
			return seqs[i]
		}
		return -1
	}
	f, err := os.Open(t.v.s.textPath())
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, searchChunk+len(q))
	for pos := lo; pos < hi; {
		n := int64(len(buf))
		if hi-pos < n {
			n = hi - pos
		}
		m, err := f.ReadAt(buf[:n], pos)
		if err != nil && int64(m) < n {
			return err
		}
		chunk := buf[:m]
		for i := 0; ; {
			j := bytes.Index(chunk[i:], q)
			if j < 0 {
				break
			}
			p := pos + int64(i+j)
			if s := owner(p); s >= 0 {
				im := items[s]
				if p+int64(len(q)) <= im.TextOff+int64(im.TextLen) {
					wanted[s] = true
				}
			}
			i += j + 1
		}
		if int64(m) < int64(len(buf)) || pos+int64(m) >= hi {
			break
		}
		// Overlap by len(q)-1 so a match across chunks is seen once.
		pos += int64(m) - int64(len(q)) + 1
	}
	for _, r := range refs {
		if wanted[int(r.Key)] {
			if !fn(r) {
				return nil
			}
		}
	}
	return nil
}

// Len is the number of entries indexed for the session.
func (s *Session) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.tree == nil {
		return 0
	}
	return s.tree.Len()
}
