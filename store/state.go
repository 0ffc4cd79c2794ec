package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"contextd"
	"contextd/migrations"
)

// State is contextd's own state database (state.db): registrations and
// rollovers. Unlike the index it is never dropped by a rebuild, and it is
// not derived: its rows are the only copy. Its schema is
// migrations/state/*.sql (PRAGMA user_version is the last applied):
//
//   - registrations: one row per session id (session_file, mode, agent_name,
//     pi_version, registered_at, updated_at), read and written here;
//   - rollovers: one row per rollover, kept after it ends, at most one open
//     (pending, settled or committed) per session; read and written by
//     rollovers.go. Its window_identity, notes, recovery and plan columns
//     hold JSON (empty before the step that fills them).
//
// Times are RFC 3339 UTC with nanoseconds; an empty time is not yet.
//
// Registration answers from memory once it has read a session id: the
// state directory is locked by one contextd (statedir.go) and
// PutRegistration is the only writer of registrations, so a cached
// registration (or its absence) stays true until PutRegistration replaces
// it. Every request reads its session's registration, and 32 at once
// queued on the database pool's lock for it (docs/benchmarks.md).
type State struct {
	DB  *DB
	Now func() time.Time

	regMu sync.RWMutex
	regs  map[string]cachedRegistration // by session id
}

// cachedRegistration is a registration read from the database, or its
// absence (found false).
type cachedRegistration struct {
	r     contextd.Registration
	found bool
}

// maxCachedRegistrations bounds the registration cache (a few hundred
// bytes each); past it the cache starts again empty.
const maxCachedRegistrations = 1 << 14

// OpenState opens (creating) the state database at path.
//
// Durability: every write method returns only once its transaction is in
// the main database file, so an acknowledged write survives kill -9 and a
// later loss or damage of state.db-wal, and (synchronous=FULL) a power
// cut. The writer runs with PRAGMA synchronous=FULL (the WAL is fsynced at
// each commit) and each write is followed by a TRUNCATE checkpoint (see
// write). The cost is measured by BenchmarkStateWrite (docs/reliability.md "State
// durability").
func OpenState(ctx context.Context, path string) (*State, error) {
	db, err := openDB(ctx, path, migrations.State, "state", "FULL", false)
	if err != nil {
		return nil, err
	}
	return &State{DB: db, Now: time.Now}, nil
}

// write runs one write statement on the writer and then checkpoints the
// WAL into the main database file and truncates it (PRAGMA
// wal_checkpoint(TRUNCATE), which fsyncs the database at synchronous=FULL).
// A checkpoint that readers keep from finishing within the busy timeout is
// an error: the write itself is committed and durable in the WAL, but the
// caller must not claim more.
func (s *State) write(ctx context.Context, query string, args ...any) (sql.Result, error) {
	res, err := s.DB.Writer.ExecContext(ctx, query, args...)
	if err != nil {
		return res, err
	}
	return res, s.checkpoint(ctx)
}

func (s *State) checkpoint(ctx context.Context) error {
	var busy, logFrames, done int
	if err := s.DB.Writer.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logFrames, &done); err != nil {
		return fmt.Errorf("state database checkpoint: %w", err)
	}
	if busy != 0 {
		return errors.New("state database checkpoint: readers kept the WAL busy; the write is in state.db-wal only")
	}
	return nil
}

// Empty reports whether the state database holds no registration and no
// rollover (a first start, or a database that lost its contents).
func (s *State) Empty(ctx context.Context) (bool, error) {
	var n int
	err := s.DB.Reader.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM registrations) + (SELECT count(*) FROM rollovers)`).Scan(&n)
	return n == 0, err
}

// Close closes the database.
func (s *State) Close() error { return s.DB.Close() }

const timeFmt = time.RFC3339Nano

// PutRegistration creates or replaces the registration of r.SessionID and
// reports whether it was new. RegisteredAt is kept on update. The read of
// the old registration and the write are one transaction on the single
// writer connection, so of concurrent first registrations of one id
// exactly one reports new.
func (s *State) PutRegistration(ctx context.Context, r contextd.Registration) (contextd.Registration, bool, error) {
	now := s.Now().UTC()
	r.RegisteredAt, r.UpdatedAt = now, now
	tx, err := s.DB.Writer.BeginTx(ctx, nil)
	if err != nil {
		return r, false, fmt.Errorf("state database: begin registration: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op
	old, err := scanRegistration(tx.QueryRowContext(ctx, `SELECT `+registrationColumns+` FROM registrations WHERE session_id=?`, r.SessionID).Scan)
	found := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return r, false, err
	}
	if found {
		r.RegisteredAt = old.RegisteredAt
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO registrations(`+registrationColumns+`) VALUES (?,?,?,?,?,?,?)
ON CONFLICT(session_id) DO UPDATE SET session_file=excluded.session_file, mode=excluded.mode, agent_name=excluded.agent_name, pi_version=excluded.pi_version, updated_at=excluded.updated_at`,
		r.SessionID, r.SessionFile, string(r.Mode), r.AgentName, r.PiVersion, r.RegisteredAt.Format(timeFmt), r.UpdatedAt.Format(timeFmt)); err != nil {
		return r, false, err
	}
	if err := tx.Commit(); err != nil {
		s.forgetRegistration(r.SessionID)
		return r, false, err
	}
	s.cacheRegistration(r.SessionID, cachedRegistration{r, true}, true)
	return r, !found, s.checkpoint(ctx)
}

// cacheRegistration records what the database holds for sessionID: always
// for a write (replace), and for a read only when no entry appeared while
// it ran (a write that committed meanwhile has the newer registration).
func (s *State) cacheRegistration(sessionID string, c cachedRegistration, replace bool) {
	s.regMu.Lock()
	defer s.regMu.Unlock()
	if s.regs == nil || len(s.regs) >= maxCachedRegistrations {
		s.regs = make(map[string]cachedRegistration)
	}
	if _, held := s.regs[sessionID]; replace || !held {
		s.regs[sessionID] = c
	}
}

// forgetRegistration drops sessionID from the cache (a write whose outcome
// is unknown: the next read goes to the database).
func (s *State) forgetRegistration(sessionID string) {
	s.regMu.Lock()
	defer s.regMu.Unlock()
	delete(s.regs, sessionID)
}

// registrationColumns are the registrations columns in scanRegistration's order.
const registrationColumns = `session_id, session_file, mode, agent_name, pi_version, registered_at, updated_at`

// Registration returns the registration of sessionID, and false when it
// has none: from memory after the first read of the id (see State).
func (s *State) Registration(ctx context.Context, sessionID string) (contextd.Registration, bool, error) {
	s.regMu.RLock()
	c, ok := s.regs[sessionID]
	s.regMu.RUnlock()
	if ok {
		return c.r, c.found, nil
	}
	row := s.DB.Reader.QueryRowContext(ctx, `SELECT `+registrationColumns+` FROM registrations WHERE session_id=?`, sessionID)
	r, err := scanRegistration(row.Scan)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		c = cachedRegistration{}
	case err != nil:
		return r, false, err
	default:
		c = cachedRegistration{r, true}
	}
	s.cacheRegistration(sessionID, c, false)
	return c.r, c.found, nil
}

// Registrations lists every registration by session id.
func (s *State) Registrations(ctx context.Context) ([]contextd.Registration, error) {
	rows, err := s.DB.Reader.QueryContext(ctx, `SELECT `+registrationColumns+` FROM registrations ORDER BY session_id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []contextd.Registration
	for rows.Next() {
		r, err := scanRegistration(rows.Scan)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func scanRegistration(scan func(...any) error) (contextd.Registration, error) {
	var r contextd.Registration
	var mode, reg, upd string
	if err := scan(&r.SessionID, &r.SessionFile, &mode, &r.AgentName, &r.PiVersion, &reg, &upd); err != nil {
		return r, err
	}
	r.Mode = contextd.Mode(mode)
	r.RegisteredAt, _ = time.Parse(timeFmt, reg)
	r.UpdatedAt, _ = time.Parse(timeFmt, upd)
	return r, nil
}
