package notes

import (
	"fmt"
	"time"
)

// SnapshotFile is one file of a note snapshot (docs/codex-contract.md
// "Local notes"): {"path", "text", "createdAt", "updatedAt"},
// times in Unix milliseconds.
type SnapshotFile struct {
	Path      string `json:"path" doc:"Full virtual path of the file."`
	Text      string `json:"text" doc:"The file's full text."`
	CreatedAt int64  `json:"createdAt" doc:"Creation time, Unix milliseconds."`
	UpdatedAt int64  `json:"updatedAt" doc:"Last update time, Unix milliseconds."`
}

// SnapshotData is the data of a codex-context-note-snapshot entry
// (docs/codex-contract.md "Local notes"): {"protocol":1, "timestamp", "files"}. Replaying it
// replaces the whole note state; Tree mode appends one after each rollover
// so the notes survive the branch cut (docs/design.md §5.3).
type SnapshotData struct {
	Protocol  int            `json:"protocol" doc:"Always 1."`
	Timestamp int64          `json:"timestamp" doc:"Unix milliseconds."`
	Files     []SnapshotFile `json:"files" doc:"Every note file, sorted by path."`
}

// SnapshotEntry is the custom entry that records a note snapshot, ready for
// pi.appendEntry: {"type":"custom", "customType":
// "codex-context-note-snapshot", "data": SnapshotData}.
type SnapshotEntry struct {
	Type       string       `json:"type" enum:"custom" doc:"Always custom."`
	CustomType string       `json:"customType" doc:"Always codex-context-note-snapshot."`
	Data       SnapshotData `json:"data" doc:"The snapshot's data."`
}

// Entry wraps d in its custom entry.
func (d SnapshotData) Entry() SnapshotEntry {
	return SnapshotEntry{Type: "custom", CustomType: CustomTypeNoteSnapshot, Data: d}
}

// Snapshot materializes s as note snapshot data taken at now (timestamp =
// now in Unix ms), with every file sorted by path (an empty state gives
// "files":[]). It refuses, with *Error CodeTooLarge and
// MsgSnapshotTooLarge, a snapshot whose data JSON would exceed
// MaxSnapshotBytes (docs/codex-contract.md "Local notes" "max snapshot"). The size is that of Go's
// encoding/json output without HTML escaping, which equals JSON.stringify's
// except that U+2028 and U+2029 take 6 bytes instead of 3: never smaller.
// A file holding a lone surrogate (written to the session file without
// contextd) is refused with *Error CodeInvalid and MsgFileLoneSurrogate, so
// the snapshot never carries U+FFFD in its place.
func Snapshot(s *State, now time.Time) (SnapshotData, error) {
	ts := now.UnixMilli()
	if ts < 0 || ts > MaxTimestamp {
		return SnapshotData{}, fmt.Errorf("notes: clock time %v is outside the supported range", now)
	}
	snapBytes := 0
	if s != nil {
		snapBytes = s.snapBytes
	}
	if snapshotJSONLen(snapBytes, ts) > MaxSnapshotBytes {
		return SnapshotData{}, tooLarge(MsgSnapshotTooLarge)
	}
	d := SnapshotData{Protocol: Protocol, Timestamp: ts, Files: []SnapshotFile{}}
	for _, f := range s.Files() {
		if err := linesLoneSurrogate(f.Path, splitLines(f.Text), 1); err != nil {
			return SnapshotData{}, err
		}
		d.Files = append(d.Files, SnapshotFile(f))
	}
	return d, nil
}
