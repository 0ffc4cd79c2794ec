package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/mattn/go-sqlite3"

	"contextd"
)

// RolloverState is the state of a rollover (docs/design.md §5.3): pending after
// the tool phase, settled once the extension took it at agent_settled,
// committed once the append plan is answered, then completed or aborted.
// Pending, settled and committed rollovers are open; a session has at most
// one open rollover.
type RolloverState string

// Rollover states.
const (
	RolloverPending   RolloverState = "pending"
	RolloverSettled   RolloverState = "settled"
	RolloverCommitted RolloverState = "committed"
	RolloverCompleted RolloverState = "completed"
	RolloverAborted   RolloverState = "aborted"
)

// Open reports whether st is pending, settled or committed.
func (st RolloverState) Open() bool {
	return st == RolloverPending || st == RolloverSettled || st == RolloverCommitted
}

// Rollover is one row of the rollovers table. The JSON columns are opaque
// to the store: the coordinator writes and reads them.
type Rollover struct {
	ID               string        // UUID, chosen by the coordinator
	SessionID        string        // Pi session id
	SessionFile      string        // resolved session file at the tool phase
	Mode             contextd.Mode // local or tree
	State            RolloverState //
	BoundaryEntryID  string        // current boundary at the tool phase
	BoundaryParentID string        // its parentId; "" for a root
	Window           []byte        // JSON window identity of the boundary
	LeafAtRequest    string        // Pi's leaf at the tool phase
	LeafAtSettle     string        // Pi's leaf at settle; "" before
	SummaryEntryID   string        // Tree: the branch_summary at commit; "" before
	Notes            []byte        // JSON note snapshot data materialized at settle; nil before
	Recovery         []byte        // JSON thread-hint recovery of the closing window, at settle; nil before
	Plan             []byte        // JSON commit answer; nil before commit
	Reason           string        // abort reason
	RequestedAt      time.Time     // tool phase
	SettledAt        time.Time     // zero before settle
	CommittedAt      time.Time     // zero before commit
	FinishedAt       time.Time     // completed or aborted; zero while open
}

// ErrRolloverOpen is returned by CreateRollover when the session already
// has an open (pending, settled or committed) rollover.
var ErrRolloverOpen = errors.New("store: the session already has an open rollover")

const rolloverCols = `rollover_id, session_id, session_file, mode, state, boundary_entry_id, boundary_parent_id, window_identity,
leaf_at_request, leaf_at_settle, summary_entry_id, notes, recovery, plan, reason, requested_at, settled_at, committed_at, finished_at`

// CreateRollover inserts r (State must be RolloverPending). Errors:
// ErrRolloverOpen when r.SessionID already has an open rollover (the
// partial unique index rollovers_open decides, so two concurrent creates
// cannot both succeed).
func (s *State) CreateRollover(ctx context.Context, r Rollover) error {
	if r.State != RolloverPending {
		return fmt.Errorf("store: a new rollover must be pending, not %q", r.State)
	}
	_, err := s.write(ctx, `INSERT INTO rollovers(`+rolloverCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		r.ID, r.SessionID, r.SessionFile, string(r.Mode), string(r.State), r.BoundaryEntryID, r.BoundaryParentID, string(r.Window),
		r.LeafAtRequest, r.LeafAtSettle, r.SummaryEntryID, string(r.Notes), string(r.Recovery), string(r.Plan), r.Reason,
		fmtTime(r.RequestedAt), fmtTime(r.SettledAt), fmtTime(r.CommittedAt), fmtTime(r.FinishedAt))
	var se sqlite3.Error
	if errors.As(err, &se) && se.ExtendedCode == sqlite3.ErrConstraintUnique {
		return ErrRolloverOpen
	}
	return err
}

// Rollover returns the rollover with id; ok is false when there is none.
func (s *State) Rollover(ctx context.Context, id string) (Rollover, bool, error) {
	return s.oneRollover(s.DB.Reader.QueryRowContext(ctx, `SELECT `+rolloverCols+` FROM rollovers WHERE rollover_id=?`, id))
}

// OpenRollover returns the open rollover of sessionID; ok is false when
// there is none.
func (s *State) OpenRollover(ctx context.Context, sessionID string) (Rollover, bool, error) {
	return s.oneRollover(s.DB.Reader.QueryRowContext(ctx, `SELECT `+rolloverCols+` FROM rollovers
WHERE session_id=? AND state IN ('pending','settled','committed')`, sessionID))
}

// CountOpenRollovers counts the open rollovers of every session.
func (s *State) CountOpenRollovers(ctx context.Context) (int, error) {
	var n int
	err := s.DB.Reader.QueryRowContext(ctx, `SELECT count(*) FROM rollovers WHERE state IN ('pending','settled','committed')`).Scan(&n)
	return n, err
}

// SettleRollover moves rollover id from pending to settled, storing the
// leaf at settle, the note snapshot and the recovery ids. It reports false,
// changing nothing, when the rollover is not pending (another settle won).
func (s *State) SettleRollover(ctx context.Context, id, leaf string, notes, recovery []byte, at time.Time) (bool, error) {
	return s.transition(ctx, `UPDATE rollovers SET state='settled', leaf_at_settle=?, notes=?, recovery=?, settled_at=?
WHERE rollover_id=? AND state='pending'`, leaf, string(notes), string(recovery), fmtTime(at), id)
}

// CommitRollover moves rollover id from settled to committed, storing the
// summary entry id (Tree; "" for Local) and the answered plan. It reports
// false, changing nothing, when the rollover is not settled.
func (s *State) CommitRollover(ctx context.Context, id, summaryID string, plan []byte, at time.Time) (bool, error) {
	return s.transition(ctx, `UPDATE rollovers SET state='committed', summary_entry_id=?, plan=?, committed_at=?
WHERE rollover_id=? AND state='settled'`, summaryID, string(plan), fmtTime(at), id)
}

// CompleteRollover moves rollover id from committed to completed. It
// reports false, changing nothing, when the rollover is not committed.
func (s *State) CompleteRollover(ctx context.Context, id string, at time.Time) (bool, error) {
	return s.transition(ctx, `UPDATE rollovers SET state='completed', finished_at=? WHERE rollover_id=? AND state='committed'`, fmtTime(at), id)
}

// AbortRollover moves an open rollover id to aborted with reason. It
// reports false, changing nothing, when the rollover is not open.
func (s *State) AbortRollover(ctx context.Context, id, reason string, at time.Time) (bool, error) {
	return s.transition(ctx, `UPDATE rollovers SET state='aborted', reason=?, finished_at=?
WHERE rollover_id=? AND state IN ('pending','settled','committed')`, reason, fmtTime(at), id)
}

func (s *State) transition(ctx context.Context, query string, args ...any) (bool, error) {
	res, err := s.write(ctx, query, args...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func (s *State) oneRollover(row *sql.Row) (Rollover, bool, error) {
	var r Rollover
	var mode, state, window, notes, recovery, plan, req, set, com, fin string
	err := row.Scan(&r.ID, &r.SessionID, &r.SessionFile, &mode, &state, &r.BoundaryEntryID, &r.BoundaryParentID, &window,
		&r.LeafAtRequest, &r.LeafAtSettle, &r.SummaryEntryID, &notes, &recovery, &plan, &r.Reason, &req, &set, &com, &fin)
	if errors.Is(err, sql.ErrNoRows) {
		return Rollover{}, false, nil
	}
	if err != nil {
		return Rollover{}, false, err
	}
	r.Mode, r.State = contextd.Mode(mode), RolloverState(state)
	r.Window, r.Notes, r.Recovery, r.Plan = rawOrNil(window), rawOrNil(notes), rawOrNil(recovery), rawOrNil(plan)
	for _, p := range []struct {
		s string
		t *time.Time
	}{{req, &r.RequestedAt}, {set, &r.SettledAt}, {com, &r.CommittedAt}, {fin, &r.FinishedAt}} {
		if *p.t, err = parseTime(p.s); err != nil {
			return Rollover{}, false, fmt.Errorf("store: rollover %s: %w", r.ID, err)
		}
	}
	return r, true, nil
}

func rawOrNil(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}

// fmtTime formats t in UTC (RFC 3339 with nanoseconds); "" for zero.
func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(timeFmt)
}

func parseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	return time.Parse(timeFmt, s)
}

// SessionRollovers returns every rollover of sessionID in the state
// database (open, completed and aborted), ordered by requested_at then id.
func (s *State) SessionRollovers(ctx context.Context, sessionID string) ([]Rollover, error) {
	ids, err := s.sessionRolloverIDs(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	out := make([]Rollover, 0, len(ids))
	for _, id := range ids {
		r, ok, err := s.Rollover(ctx, id)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, r)
		}
	}
	return out, nil
}

func (s *State) sessionRolloverIDs(ctx context.Context, sessionID string) ([]string, error) {
	rows, err := s.DB.Reader.QueryContext(ctx, `SELECT rollover_id FROM rollovers WHERE session_id=? ORDER BY requested_at, rollover_id`, sessionID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}
