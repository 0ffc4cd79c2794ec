package notes

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits of Local and Tree notes (docs/codex-contract.md "Notes
// entries" and "Local notes").
const (
	// MaxFileBytes is the largest note file, in UTF-8 bytes of its text.
	MaxFileBytes = 1_000_000
	// MaxSnapshotBytes is the largest note snapshot, in bytes of its JSON
	// data object (see Snapshot).
	MaxSnapshotBytes = 10_000_000
)

// File is one note file of a State.
type File struct {
	Path      string // full virtual path, e.g. "/root/notes/plan.md"
	Text      string // content, valid UTF-8 but for lone surrogates kept in WTF-8 from the session file (keptText), at most MaxFileBytes bytes
	CreatedAt int64  // Unix ms of the entry that created the file
	UpdatedAt int64  // Unix ms of the entry that last wrote or appended to it
}

// Meta returns f's metadata as the operations show it.
func (f File) Meta() FileMeta {
	return FileMeta{Path: f.Path, Bytes: len(f.Text), CreatedAt: FormatTime(f.CreatedAt), UpdatedAt: FormatTime(f.UpdatedAt)}
}

// Lines returns the number of lines of f.Text (package doc, "Lines").
func (f File) Lines() int { return countLines(f.Text) }

// Skip records a note event that Replay could not apply.
type Skip struct {
	EntryID string // Event.EntryID
	Reason  string // the *Error message, e.g. MsgFileTooLarge
}

// State is the note state of one branch: note files keyed by full virtual
// path. The zero value and a nil *State are empty states. A State is not
// safe for concurrent Apply; once built, any number of goroutines may read
// it.
type State struct {
	files map[string]*stateFile
	// snapBytes is the JSON size of the files of a snapshot of this state:
	// the sum of snapshotFileJSONLen over files plus the commas between
	// them (see snapshotJSONLen).
	snapBytes int

	// Skipped lists the events Replay did not apply, in order: appends that
	// would grow a file beyond MaxFileBytes, and events that fail the
	// checks of DecodeEvent because they were built by hand.
	Skipped []Skip
}

type stateFile struct {
	File
	textJSON int // jsonStringLen(Text)
}

// Replay applies events in order to an empty state and returns it
// (docs/codex-contract.md "Local notes", docs/design.md §4): a snapshot replaces
// the whole state; a write replaces a file's text, keeping CreatedAt when
// the file existed, with UpdatedAt = the event's timestamp; an append adds
// its text exactly at the end, creating the file (CreatedAt = UpdatedAt =
// timestamp) when missing. Events Apply refuses are recorded in
// State.Skipped and leave the state unchanged.
//
// In Local mode events are the note entries of the active branch; in Tree
// mode the latest snapshot on the active branch and the entries after it
// (replaying the whole branch gives the same result).
func Replay(events []Event) *State {
	s := &State{}
	for _, ev := range events {
		if err := s.Apply(ev); err != nil {
			s.Skipped = append(s.Skipped, Skip{EntryID: ev.EntryID, Reason: err.Error()})
		}
	}
	return s
}

// Apply applies one event, as Replay does. It refuses, leaving s unchanged,
// an event with an unknown action, a non-canonical path or a timestamp out
// of [0, MaxTimestamp] (*Error, CodeInvalid), and a write, append or
// snapshot file whose text would exceed MaxFileBytes (*Error, CodeTooLarge,
// MsgFileTooLarge).
func (s *State) Apply(ev Event) error {
	if ev.Timestamp < 0 || ev.Timestamp > MaxTimestamp {
		return invalidf(fmt.Sprintf("note entry %q has a timestamp out of range", ev.EntryID))
	}
	switch ev.Action {
	case ActionSnapshot:
		files := make(map[string]*stateFile, len(ev.Files))
		for _, f := range ev.Files {
			if !canonical(f.Path) || f.CreatedAt < 0 || f.CreatedAt > MaxTimestamp || f.UpdatedAt < 0 || f.UpdatedAt > MaxTimestamp {
				return invalidf(fmt.Sprintf("note snapshot %q has an invalid file %q", ev.EntryID, f.Path))
			}
			if len(f.Text) > MaxFileBytes {
				return tooLarge(MsgFileTooLarge)
			}
			files[f.Path] = &stateFile{File: File(f), textJSON: jsonStringLen(f.Text)}
		}
		s.files = files
		s.snapBytes = 0
		for _, f := range files {
			s.snapBytes += snapshotFileJSONLen(f)
		}
		if len(files) > 1 {
			s.snapBytes += len(files) - 1
		}
		return nil
	case ActionWrite, ActionAppend:
	default:
		return invalidf(fmt.Sprintf("note entry %q has an unknown action %q", ev.EntryID, ev.Action))
	}
	if !canonical(ev.Path) {
		return invalidf(fmt.Sprintf("note entry %q has an invalid path %q", ev.EntryID, ev.Path))
	}
	old := s.lookup(ev.Path)
	next := &stateFile{File: File{Path: ev.Path, Text: ev.Text, CreatedAt: ev.Timestamp, UpdatedAt: ev.Timestamp}, textJSON: jsonStringLen(ev.Text)}
	if old != nil {
		next.CreatedAt = old.CreatedAt
		if ev.Action == ActionAppend {
			next.Text = old.Text + ev.Text
			next.textJSON += old.textJSON - 2 // one pair of quotes
		}
	}
	if len(next.Text) > MaxFileBytes {
		return tooLarge(MsgFileTooLarge)
	}
	s.put(old, next)
	return nil
}

// Clone returns a copy of s that Apply may change without changing s (the
// files themselves are never changed in place, so they are shared). A nil
// s clones to an empty state.
func (s *State) Clone() *State {
	if s == nil {
		return &State{}
	}
	return &State{files: maps.Clone(s.files), snapBytes: s.snapBytes, Skipped: slices.Clone(s.Skipped)}
}

// SnapshotBytes is the JSON size of the files of a snapshot of s (the
// files array's elements and commas): an estimate of the memory s holds.
func (s *State) SnapshotBytes() int {
	if s == nil {
		return 0
	}
	return s.snapBytes
}

// put replaces old (nil when absent) by next and keeps snapBytes current.
func (s *State) put(old, next *stateFile) {
	if s.files == nil {
		s.files = make(map[string]*stateFile)
	}
	if old != nil {
		s.snapBytes -= snapshotFileJSONLen(old)
	} else if len(s.files) > 0 {
		s.snapBytes++ // comma
	}
	s.files[next.Path] = next
	s.snapBytes += snapshotFileJSONLen(next)
}

func (s *State) lookup(path string) *stateFile {
	if s == nil {
		return nil
	}
	return s.files[path]
}

// Len returns the number of note files.
func (s *State) Len() int {
	if s == nil {
		return 0
	}
	return len(s.files)
}

// File returns the note file at the full virtual path path.
func (s *State) File(path string) (File, bool) {
	f := s.lookup(path)
	if f == nil {
		return File{}, false
	}
	return f.File, true
}

// Files returns every note file, sorted by path (byte order).
func (s *State) Files() []File {
	if s == nil {
		return []File{}
	}
	out := make([]File, 0, len(s.files))
	for _, f := range s.files {
		out = append(out, f.File)
	}
	slices.SortFunc(out, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// FormatTime formats Unix milliseconds as ISO-8601 UTC with milliseconds,
// the format of JavaScript's toISOString: 1783342028114 →
// "2026-07-06T12:47:08.114Z".
func FormatTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

// countLines counts lines as the package doc says: "\n" count + 1, and 0 for
// the empty text.
func countLines(text string) int {
	if text == "" {
		return 0
	}
	return strings.Count(text, "\n") + 1
}

// splitLines splits text into its lines (package doc, "Lines").
func splitLines(text string) []string {
	if text == "" {
		return nil
	}
	return strings.Split(text, "\n")
}

// snapshotFileJSONLen is the length of the JSON object of f in a snapshot:
// {"path":…,"text":…,"createdAt":…,"updatedAt":…}.
func snapshotFileJSONLen(f *stateFile) int {
	return len(`{"path":,"text":,"createdAt":,"updatedAt":}`) + jsonStringLen(f.Path) + f.textJSON +
		len(strconv.FormatInt(f.CreatedAt, 10)) + len(strconv.FormatInt(f.UpdatedAt, 10))
}

// snapshotJSONLen is the length of the JSON of the snapshot data of s taken
// at timestamp ts (see SnapshotData), given the files' share filesLen.
func snapshotJSONLen(filesLen int, ts int64) int {
	return len(`{"protocol":1,"timestamp":,"files":[]}`) + len(strconv.FormatInt(ts, 10)) + filesLen
}

// jsonStringLen returns the length of s encoded as a JSON string, quotes
// included, exactly as encoding/json writes it with HTML escaping off:
// `"`, `\`, \b, \f, \n, \r, \t take 2 bytes, other bytes below 0x20 take 6,
// U+2028 and U+2029 take 6, an invalid byte takes 6 (\ufffd), everything
// else its UTF-8 length. DEL is not escaped.
func jsonStringLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			switch {
			case b == '"' || b == '\\' || b == '\b' || b == '\f' || b == '\n' || b == '\r' || b == '\t':
				n += 2
			case b < 0x20:
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}
