package notes

import (
	"errors"

	"contextd"
)

// invalidf is the error of a bad argument (path, enum value, missing
// query, invalid UTF-8): contextd.EInvalid, HTTP 422. A note file or the
// note snapshot over its byte limit is contextd.ETooLarge (HTTP 413).
func invalidf(msg string) *contextd.Error {
	return &contextd.Error{Code: contextd.EInvalid, Message: msg}
}

// tooLarge is the error of a note file or the note snapshot over its byte
// limit (msg is MsgFileTooLarge or MsgSnapshotTooLarge).
func tooLarge(msg string) *contextd.Error {
	return &contextd.Error{Code: contextd.ETooLarge, Message: msg}
}

// Fixed error messages (docs/codex-contract.md "Local notes").
const (
	// MsgFileTooLarge is the seed's message for a note file over MaxFileBytes.
	MsgFileTooLarge = "Note file exceeds the 1,000,000-byte limit"
	// MsgSnapshotTooLarge is returned when all note files together would not
	// fit in one note snapshot (MaxSnapshotBytes). The reference gives the
	// limit but no message; this sentence is contextd's.
	MsgSnapshotTooLarge = "Note files together exceed the 10,000,000-byte note snapshot limit; shorten or overwrite existing notes first"
	// MsgPathRequired is the seed's message for an empty file path.
	MsgPathRequired = "Note file path is required"
	// MsgQueryRequired is the seed's message for an empty search query.
	MsgQueryRequired = "notes search_contents requires query"
	// MsgTextNotUTF8 is returned when write or append text is not valid UTF-8.
	MsgTextNotUTF8 = "Note text must be valid UTF-8"
	// MsgTextLoneSurrogate is returned when write or append text holds a
	// lone surrogate escape (a format for fmt.Sprintf with the surrogate and
	// its 1-based character position). A note is stored as UTF-8, which
	// cannot hold half of a UTF-16 pair (RFC 3629 §3), and storing U+FFFD
	// instead would change the text without a word.
	MsgTextLoneSurrogate = "Note text holds a lone surrogate \\u%04x at character %d (half of a UTF-16 pair without the other half), which a note cannot store; send the whole pair or remove it"
	// MsgFileLoneSurrogate is returned when a read, a search or a note
	// snapshot would answer note text holding a lone surrogate (a format
	// for fmt.Sprintf with the file's path, the surrogate, its 1-based line
	// and its 1-based character position in that line). Such text reached
	// the session file without contextd (MsgTextLoneSurrogate refuses it
	// in a write); answering U+FFFD instead would change it without a word.
	MsgFileLoneSurrogate = "Note %s holds a lone surrogate \\u%04x at line %d, character %d (half of a UTF-16 pair, which a note cannot hold; it was written to the session file without contextd); rewrite the file with write_file"
)

// ErrMalformedEvent is wrapped by every DecodeEvent error: the entry's data
// does not have the shape of docs/codex-contract.md "Notes entries". Such an
// entry is counted and skipped; it never changes the note state.
var ErrMalformedEvent = errors.New("malformed note entry")
