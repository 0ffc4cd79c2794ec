package store

import (
	"path/filepath"

	"contextd/session"
)

// DecodeEach decodes the entries at seqs (Seqs of v.Tree, any order) with
// one open of the session file and calls fn for each, in the order given.
// Errors: ErrFileChanged when the file is gone, swapped, or an entry's
// bytes no longer parse to the indexed entry; fn's error ends the walk.
func (v *View) DecodeEach(seqs []int, fn func(seq int, e *session.Entry, d *session.Decoded) error) error {
	if len(seqs) == 0 {
		return nil
	}
	real, err := filepath.EvalSymlinks(v.Path)
	if err != nil {
		return ErrFileChanged
	}
	f, _, err := v.s.x.openSessionFile(real)
	if err != nil {
		return ErrFileChanged
	}
	defer f.Close()
	h := v.Tree.Header
	for _, seq := range seqs {
		e := &v.Tree.Entries[seq]
		buf := make([]byte, e.Length)
		if _, err := f.ReadAt(buf, e.Offset); err != nil {
			return ErrFileChanged
		}
		p := session.Parser{Header: &h, NextLine: e.Line, NextSeq: e.Seq, LastV1ID: e.ParentID}
		got, d, skip := p.ParseLine(buf, e.Offset)
		if skip != session.SkipNone || got == nil || got.ID != e.ID {
			return ErrFileChanged
		}
		if err := fn(seq, got, d); err != nil {
			return err
		}
	}
	return nil
}
