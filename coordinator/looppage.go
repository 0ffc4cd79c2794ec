package coordinator

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"

	"contextd"
	"contextd/history"
)

// Paging of a rollover loop's window ids (GET
// /v1/sessions/{session_id}/rollover_loop; docs/api.md, docs/security.md
// N10): GET /v1/sessions/{id} names the MaxLoopWindowIDs most recent and,
// when there are more, a cursor for the rest.
const (
	// DefaultLoopPageLimit and MaxLoopPageLimit bound one page.
	DefaultLoopPageLimit = MaxLoopWindowIDs
	MaxLoopPageLimit     = 100
	// MaxLoopCursorChars bounds a cursor (a version byte, two 8-byte
	// digests and a varint position, base64url: at most 36 characters).
	MaxLoopCursorChars = 64
)

// RolloverLoopPage is GET /v1/sessions/{session_id}/rollover_loop.
type RolloverLoopPage struct {
	Windows    int      `json:"windows" doc:"Windows in the loop now (RolloverLoop.windows), 0 when the active branch has none."`
	WindowIDs  []string `json:"window_ids" doc:"One page of their window ids, most recent first: at most limit, each cut like history IDs (over 256 characters: \"…\" and the last 255)."`
	NextCursor string   `json:"next_cursor,omitempty" doc:"Opaque; pass as cursor for the next, older page. Absent on the last page."`
}

// loopCursor is what a cursor says: the session it belongs to, how many
// of the loop's ids (counted from its oldest) are still to list, and
// digests of the next id and of the loop's oldest one. A loop grows at
// its recent end, so positions counted from the oldest end stay valid
// while it grows; the digests tell a loop that was broken or replaced.
type loopCursor struct {
	session [8]byte
	left    uint64
	next    [8]byte
	oldest  [8]byte
}

const loopCursorVersion = 1

func digest8(s string) (d [8]byte) {
	sum := sha256.Sum256([]byte(s))
	copy(d[:], sum[:8])
	return d
}

func (c loopCursor) encode() string {
	b := []byte{loopCursorVersion}
	b = append(b, c.session[:]...)
	b = binary.AppendUvarint(b, c.left)
	b = append(b, c.next[:]...)
	b = append(b, c.oldest[:]...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// errBadCursor is the 400 of a cursor contextd did not issue.
func errBadCursor() error {
	return contextd.Errorf(contextd.EBadRequest, "cursor is not a rollover_loop cursor contextd issued; pass next_cursor from GET /v1/sessions/{id} or from the previous page unchanged, or omit cursor to start from the most recent window")
}

func decodeLoopCursor(s string) (loopCursor, error) {
	var c loopCursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) < 1+8+1+16 || b[0] != loopCursorVersion {
		return c, errBadCursor()
	}
	copy(c.session[:], b[1:9])
	left, n := binary.Uvarint(b[9:])
	if n <= 0 || len(b) != 9+n+16 || left == 0 {
		return c, errBadCursor()
	}
	c.left = left
	copy(c.next[:], b[9+n:])
	copy(c.oldest[:], b[9+n+8:])
	return c, nil
}

// loopPage returns the page of ids (the loop's window ids, most recent
// first) that cursor names (the first page when cursor is ""), at most
// limit ids.
func loopPage(sessionID string, ids []string, cursor string, limit int) (RolloverLoopPage, error) {
	if len(ids) < RolloverLoopThreshold {
		ids = nil
	}
	start := 0
	if cursor != "" {
		c, err := decodeLoopCursor(cursor)
		if err != nil {
			return RolloverLoopPage{}, err
		}
		if c.session != digest8(sessionID) {
			return RolloverLoopPage{}, contextd.Errorf(contextd.EBadRequest, "cursor belongs to another session; pass the cursor given for session %q, or omit cursor to start from the most recent window", sessionID)
		}
		start = len(ids) - int(min(c.left, uint64(len(ids))))
		if c.left > uint64(len(ids)) || digest8(ids[start]) != c.next || digest8(ids[len(ids)-1]) != c.oldest {
			return RolloverLoopPage{}, contextd.Errorf(contextd.EConflict, "the rollover loop of session %q changed since this cursor was issued (a window with progress ended it, or the file was rewritten); list it again without cursor", sessionID)
		}
	}
	end := min(start+limit, len(ids))
	page := RolloverLoopPage{Windows: len(ids), WindowIDs: make([]string, 0, end-start)}
	for _, id := range ids[start:end] {
		page.WindowIDs = append(page.WindowIDs, history.BoundID(id))
	}
	if end < len(ids) {
		page.NextCursor = loopCursor{session: digest8(sessionID), left: uint64(len(ids) - end), next: digest8(ids[end]), oldest: digest8(ids[len(ids)-1])}.encode()
	}
	return page, nil
}

// RolloverLoopPageOf answers GET /v1/sessions/{session_id}/rollover_loop:
// one page of the window ids of the rollover loop on the active branch
// (the file's last entry), most recent first. limit is 1 to
// MaxLoopPageLimit (0: DefaultLoopPageLimit). A malformed cursor or one
// of another session is EBadRequest; a cursor of a loop that has since
// been broken or replaced is EConflict (list again without it).
func (s *Service) RolloverLoopPageOf(ctx context.Context, sessionID, cursor string, limit int) (RolloverLoopPage, error) {
	if limit == 0 {
		limit = DefaultLoopPageLimit
	}
	if limit < 1 || limit > MaxLoopPageLimit || len(cursor) > MaxLoopCursorChars {
		return RolloverLoopPage{}, contextd.Errorf(contextd.EInvalid, "limit must be 1 to %d and cursor at most %d characters", MaxLoopPageLimit, MaxLoopCursorChars)
	}
	t, err := s.Resolve(ctx, sessionID)
	if err != nil {
		return RolloverLoopPage{}, err
	}
	if t.Session == nil {
		return RolloverLoopPage{}, contextd.Errorf(contextd.EConflict, "session %q is in remote mode: contextd does not read its file", sessionID)
	}
	defer s.holdLineage(ctx, t)()
	var page RolloverLoopPage
	err = s.withBranch(t, "", func(b *Branch) error {
		ids, err := noProgress(b, false)
		if err != nil {
			return err
		}
		page, err = loopPage(sessionID, ids, cursor, limit)
		return err
	})
	return page, err
}
