// Package inspect reads one Pi session file and describes it for a person:
// Summary prints the header, counts, windows, archive manifests (valid or
// invalid with their reasons, as GET /v1/sessions reports them) and skipped
// lines; Tree draws the entry tree with the active path, windows and their
// boundaries, archives and their summaries, labels, and collapsed runs of
// ordinary entries. It only reads the file (docs/design.md §1: contextd never
// writes a session file).
package inspect

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"contextd/archive"
	"contextd/session"
)

// ErrNotSession is returned (wrapped, with the reason) for a file that is
// not a Pi session: its first parsed line is not a session header, or it
// has no complete header line at all. The command exits non-zero on it.
var ErrNotSession = errors.New("not a Pi session file")

// File is one session file as read by Load.
type File struct {
	Path   string
	Size   int64 // bytes in the file when it was opened
	Next   int64 // offset after the last complete line read
	Tree   *session.Tree
	Stats  session.Stats
	Branch []int // the active branch (Pi getBranch from the last entry), root first
	Cycle  bool  // the active branch's parent chain loops
	// Archives holds every codex-context-tree-archive manifest, validated
	// as the service validates them (archive.Build).
	Archives *archive.Index
	// Summaries maps the Seq of each branch_summary entry to its summary text.
	Summaries map[int]string
	// Labels maps a target entry id to its current label (Pi: the last
	// label entry for a target wins; "" clears it).
	Labels map[string]string
}

// Load parses path up to its size when opened (a file that grows meanwhile
// is read as it was) with lines capped at maxLine bytes, and validates its
// archive manifests. Errors: the os error for an unreadable path, an error
// for a non-regular file, and ErrNotSession (wrapped) for a file that is
// not a Pi session.
func Load(path string, maxLine int) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file; inspect reads a session .jsonl file", path)
	}
	out := &File{Path: path, Size: fi.Size(), Summaries: map[int]string{}, Labels: map[string]string{}}
	data := map[int]json.RawMessage{}
	var p session.Parser
	tree, next, st, err := session.Feed(f, &p, nil, 0, fi.Size(), maxLine, func(e *session.Entry, d *session.Decoded) error {
		switch {
		case archive.IsManifest(e):
			data[e.Seq] = append(json.RawMessage(nil), d.Data...)
		case e.Type == session.TypeBranchSummary:
			out.Summaries[e.Seq] = strings.Clone(d.Summary)
		case e.Type == session.TypeLabel && e.TargetID() != "":
			if e.Label() == "" {
				delete(out.Labels, e.TargetID())
			} else {
				out.Labels[strings.Clone(e.TargetID())] = strings.Clone(e.Label())
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out.Next, out.Stats = next, st
	switch {
	case p.NotPi:
		return nil, fmt.Errorf("%s: %w (the first parsed line is not a session header with a string id)", path, ErrNotSession)
	case tree == nil && st.Lines > 0:
		return nil, fmt.Errorf("%s: %w (no session header; %d lines skipped)", path, ErrNotSession, st.Lines)
	case tree == nil:
		return nil, fmt.Errorf("%s: %w (empty: no complete header line)", path, ErrNotSession)
	}
	out.Tree = tree
	out.Branch, out.Cycle, _ = tree.Branch("")
	out.Archives, err = archive.Build(tree, func(seq int) (json.RawMessage, error) { return data[seq], nil })
	if err != nil {
		return nil, err
	}
	return out, nil
}
