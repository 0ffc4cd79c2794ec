package notes

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"unicode/utf8"

	"contextd/session"
)

// Custom entry types of note entries (docs/codex-contract.md "Notes entries";
// the same strings as session.CustomTypeNote and
// session.CustomTypeNoteSnapshot).
const (
	CustomTypeNote         = "codex-context-note"
	CustomTypeNoteSnapshot = "codex-context-note-snapshot"
)

// Protocol is the `protocol` value of every note entry contextd reads or
// plans (docs/codex-contract.md "Local notes").
const Protocol = 1

// Event actions. ActionAppend and ActionWrite are the `action` values of a
// codex-context-note entry; ActionSnapshot marks a
// codex-context-note-snapshot entry.
const (
	ActionAppend   = "append"
	ActionWrite    = "write"
	ActionSnapshot = "snapshot"
)

// MaxTimestamp is the largest accepted entry timestamp, in Unix
// milliseconds: 9999-12-31T23:59:59.999Z, the last instant that
// toISOString writes with a four-digit year. Timestamps are also ≥ 0.
const MaxTimestamp int64 = 253402300799999

// Event is one decoded note entry of a session's active branch.
//
// For ActionAppend and ActionWrite, Path is the full virtual path (the form
// ResolveFile returns), Text the appended or written text and Timestamp the
// entry's data.timestamp in Unix milliseconds. For ActionSnapshot, Files is
// the complete note state (sorted by path as written, but any order is
// accepted) and Timestamp the snapshot's data.timestamp.
type Event struct {
	EntryID   string         // the Pi entry id, for error reports and Skipped
	Action    string         // ActionAppend, ActionWrite or ActionSnapshot
	Path      string         // append, write
	Text      string         // append, write
	Timestamp int64          // Unix ms
	Files     []SnapshotFile // snapshot
}

// noteDataIn is NoteData as read, with pointers to tell absent from zero.
type noteDataIn struct {
	Protocol  *float64  `json:"protocol"`
	Action    *string   `json:"action"`
	Path      *string   `json:"path"`
	Text      *keptText `json:"text"`
	Timestamp *float64  `json:"timestamp"`
}

type snapshotFileIn struct {
	Path      *string   `json:"path"`
	Text      *keptText `json:"text"`
	CreatedAt *float64  `json:"createdAt"`
	UpdatedAt *float64  `json:"updatedAt"`
}

type snapshotDataIn struct {
	Protocol  *float64          `json:"protocol"`
	Timestamp *float64          `json:"timestamp"`
	Files     *[]snapshotFileIn `json:"files"`
}

// keptText is a note text as read from the session file: decoded as
// encoding/json decodes a string, except that a lone surrogate escape
// stays that code point in WTF-8 (session.DecodeText), as Pi's JSON.parse
// keeps it, instead of becoming U+FFFD; a read, search or snapshot that
// would answer it is refused (MsgFileLoneSurrogate).
type keptText string

// UnmarshalJSON decodes b, one JSON string, as described above. Errors:
// b is not a JSON string.
func (t *keptText) UnmarshalJSON(b []byte) error {
	var s string
	if !bytes.Contains(b, []byte(`\u`)) {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	} else {
		var err error
		if s, err = session.DecodeText(b); err != nil {
			return fmt.Errorf("text is not a JSON string: %w", err)
		}
	}
	*t = keptText(s)
	return nil
}

// DecodeEvent decodes the `data` of a custom entry whose customType is
// CustomTypeNote or CustomTypeNoteSnapshot (docs/codex-contract.md
// "Notes entries", "Local notes"):
//
//	codex-context-note:          {protocol:1, action:"append"|"write", path, text, timestamp}
//	codex-context-note-snapshot: {protocol:1, timestamp, files:[{path, text, createdAt, updatedAt}]}
//
// Timestamps are Unix milliseconds: JSON integers (or integral numbers) in
// [0, MaxTimestamp]. Paths must be full virtual note paths, exactly as
// ResolveFile returns them; texts are at most MaxFileBytes UTF-8 bytes; a
// snapshot may not name a path twice. Unknown fields are ignored. Any other
// shape, and any other customType, is an error wrapping ErrMalformedEvent,
// which the caller counts and skips.
func DecodeEvent(entryID, customType string, data []byte) (Event, error) {
	bad := func(format string, args ...any) (Event, error) {
		return Event{}, fmt.Errorf("%w %q (%s): %s", ErrMalformedEvent, entryID, customType, fmt.Sprintf(format, args...))
	}
	if len(bytes.TrimSpace(data)) == 0 || bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		return bad("data is missing")
	}
	switch customType {
	case CustomTypeNote:
		var in noteDataIn
		if err := json.Unmarshal(data, &in); err != nil {
			return bad("data is not a note object: %v", err)
		}
		if in.Protocol == nil || *in.Protocol != Protocol {
			return bad("protocol must be %d", Protocol)
		}
		if in.Action == nil || (*in.Action != ActionAppend && *in.Action != ActionWrite) {
			return bad(`action must be "append" or "write"`)
		}
		ts, ok := millis(in.Timestamp)
		if !ok {
			return bad("timestamp must be an integer number of milliseconds in [0, %d]", MaxTimestamp)
		}
		if in.Path == nil || !canonical(*in.Path) {
			return bad("path must be a full note path such as /root/notes/plan.md")
		}
		if in.Text == nil {
			return bad("text is missing")
		}
		if len(*in.Text) > MaxFileBytes {
			return bad("text is longer than %d bytes", MaxFileBytes)
		}
		return Event{EntryID: entryID, Action: *in.Action, Path: *in.Path, Text: string(*in.Text), Timestamp: ts}, nil

	case CustomTypeNoteSnapshot:
		var in snapshotDataIn
		if err := json.Unmarshal(data, &in); err != nil {
			return bad("data is not a note snapshot object: %v", err)
		}
		if in.Protocol == nil || *in.Protocol != Protocol {
			return bad("protocol must be %d", Protocol)
		}
		ts, ok := millis(in.Timestamp)
		if !ok {
			return bad("timestamp must be an integer number of milliseconds in [0, %d]", MaxTimestamp)
		}
		if in.Files == nil {
			return bad("files is missing")
		}
		files := make([]SnapshotFile, 0, len(*in.Files))
		seen := make(map[string]bool, len(*in.Files))
		for i, f := range *in.Files {
			if f.Path == nil || !canonical(*f.Path) {
				return bad("files[%d].path must be a full note path such as /root/notes/plan.md", i)
			}
			if seen[*f.Path] {
				return bad("files[%d].path %q appears twice", i, *f.Path)
			}
			seen[*f.Path] = true
			if f.Text == nil {
				return bad("files[%d].text is missing", i)
			}
			if len(*f.Text) > MaxFileBytes {
				return bad("files[%d].text is longer than %d bytes", i, MaxFileBytes)
			}
			created, ok1 := millis(f.CreatedAt)
			updated, ok2 := millis(f.UpdatedAt)
			if !ok1 || !ok2 {
				return bad("files[%d] createdAt and updatedAt must be integer milliseconds in [0, %d]", i, MaxTimestamp)
			}
			files = append(files, SnapshotFile{Path: *f.Path, Text: string(*f.Text), CreatedAt: created, UpdatedAt: updated})
		}
		return Event{EntryID: entryID, Action: ActionSnapshot, Timestamp: ts, Files: files}, nil
	}
	return bad("not a note entry type")
}

// millis validates a JSON number as a timestamp in [0, MaxTimestamp].
func millis(v *float64) (int64, bool) {
	if v == nil || math.IsNaN(*v) || *v != math.Trunc(*v) || *v < 0 || *v > float64(MaxTimestamp) {
		return 0, false
	}
	return int64(*v), true
}

// canonical reports whether p is a full note path, unchanged by ResolveFile.
func canonical(p string) bool {
	if !utf8.ValidString(p) {
		return false
	}
	r, err := ResolveFile(DefaultAgent, p)
	return err == nil && r == p
}
