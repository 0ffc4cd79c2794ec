// Package store keeps contextd's SQLite databases: the derived session index
// (index.db: sessions, entry blocks, tool calls, plus each session's
// item-text frames and frame filters under texts/) and contextd's own
// state (state.db: registrations, rollovers). Each on-disk format is
// written at the top of the file that reads it: entry blocks in
// entryblock.go, the text frames in textstore.go, the frame filters in
// framefilter.go, the generations of a session's text files in
// textfiles.go, state.db in state.go; the SQL schemas are the migrations
// (migrations/index, migrations/state). It opens SQLite in WAL
// mode with one writer connection and a reader pool, runs the embedded
// migrations, ingests session files incrementally by byte offset and serves
// consistent read views. It knows nothing about HTTP.
//
// Imports go one way (docs/design.md §3): store renders history items at ingest, so
// it imports history (a deliberate direction: history is a leaf over
// session), and it never imports coordinator or api.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/mattn/go-sqlite3" // SQLite driver (cgo); FTS5 needs -tags sqlite_fts5
)

// ErrNewerSchema is returned by OpenDB when the database was written by a
// newer contextd (its user_version is above the newest embedded migration).
var ErrNewerSchema = errors.New("database schema is newer than this binary")

// ErrCorrupt is returned by OpenDB when SQLite reports the file is not a
// database or fails its quick integrity check.
var ErrCorrupt = errors.New("database file is corrupt")

// DB is one SQLite file opened twice: Writer has exactly one connection
// (transactions start with BEGIN IMMEDIATE), Reader is a read-only pool.
// The derived index also has a checkpointer (checkpoint.go).
type DB struct {
	Path   string
	Writer *sql.DB
	Reader *sql.DB
	ckpt   *checkpointer // nil: SQLite's automatic checkpoints (state.db)
}

// DefaultBusyTimeout is the SQLite busy timeout in milliseconds.
const DefaultBusyTimeout = 5000

// OpenDB opens (creating if needed) the SQLite database at path, verifies WAL
// mode, and applies the migrations in fsys (files NNNN_name.sql under one
// directory). Errors: ErrNewerSchema, ErrCorrupt, or an I/O error.
func OpenDB(ctx context.Context, path string, fsys fs.FS, dir string) (*DB, error) {
	return openDB(ctx, path, fsys, dir, "NORMAL", true)
}

// openDB is OpenDB with the writer's PRAGMA synchronous: NORMAL for the
// derived index (a commit lost to a power cut is re-indexed from the
// JSONL), FULL for the state database (OpenState). ownCheckpoints runs
// the checkpoints in a checkpointer instead of in the writer's commits
// (checkpoint.go; the derived index).
func openDB(ctx context.Context, path string, fsys fs.FS, dir, synchronous string, ownCheckpoints bool) (*DB, error) {
	if err := privateDir(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("create database directory: %w", err)
	}
	// The databases hold note snapshots and registrations: user-only
	// (0600), including the -wal and -shm files (docs/security.md).
	if err := privateFile(path); err != nil {
		return nil, fmt.Errorf("create database file: %w", err)
	}
	for _, p := range []string{path + "-wal", path + "-shm"} {
		if err := narrowIfExists(p); err != nil {
			return nil, fmt.Errorf("restrict %s to its owner: %w", filepath.Base(p), err)
		}
	}
	q := url.Values{}
	q.Set("_journal_mode", "WAL")
	q.Set("_busy_timeout", strconv.Itoa(DefaultBusyTimeout))
	q.Set("_foreign_keys", "on")
	q.Set("_synchronous", synchronous)
	q.Set("_txlock", "immediate")
	// Each connection keeps its last prepared statements: every sync of
	// an appended line runs the same few (ingest.go commitBatch), and
	// preparing them again was a seventh of a catch-up's CPU.
	q.Set("_stmt_cache_size", "32")
	dsn := "file:" + path + "?" + q.Encode()
	var w *sql.DB
	var err error
	if ownCheckpoints {
		w = sql.OpenDB(newNoAutoCheckpoint(dsn))
	} else if w, err = sql.Open("sqlite3", dsn); err != nil {
		return nil, fmt.Errorf("open writer: %w", err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	db := &DB{Path: path, Writer: w}
	fail := func(err error) (*DB, error) {
		db.Close()
		return nil, err
	}
	var mode string
	if err := w.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		if isCorrupt(err) {
			return fail(fmt.Errorf("%w: %w", ErrCorrupt, err))
		}
		return fail(fmt.Errorf("read journal mode: %w", err))
	}
	if mode != "wal" {
		return fail(fmt.Errorf("journal mode is %q, want wal", mode))
	}
	var check string
	if err := w.QueryRowContext(ctx, "PRAGMA quick_check").Scan(&check); err != nil {
		return fail(fmt.Errorf("%w: quick_check: %w", ErrCorrupt, err))
	} else if check != "ok" {
		return fail(fmt.Errorf("%w: quick_check: %s", ErrCorrupt, check))
	}
	if err := migrate(ctx, w, fsys, dir); err != nil {
		return fail(err)
	}
	rq := url.Values{}
	rq.Set("_busy_timeout", strconv.Itoa(DefaultBusyTimeout))
	rq.Set("_query_only", "1")
	rq.Set("mode", "ro")
	r, err := sql.Open("sqlite3", "file:"+path+"?"+rq.Encode())
	if err != nil {
		return fail(fmt.Errorf("open reader: %w", err))
	}
	r.SetMaxOpenConns(8)
	db.Reader = r
	if ownCheckpoints {
		if db.ckpt, err = startCheckpointer(path, dsn, db.Writer); err != nil {
			return fail(fmt.Errorf("open checkpointer: %w", err))
		}
	}
	return db, nil
}

// Close closes both pools.
func (db *DB) Close() error {
	var errs []error
	if db.ckpt != nil {
		errs = append(errs, db.ckpt.close())
	}
	if db.Reader != nil {
		errs = append(errs, db.Reader.Close())
	}
	if db.Writer != nil {
		errs = append(errs, db.Writer.Close())
	}
	return errors.Join(errs...)
}

// isCorrupt reports whether err is SQLite's SQLITE_CORRUPT ("database disk
// image is malformed") or SQLITE_NOTADB ("file is not a database"):
// mattn/go-sqlite3 returns a sqlite3.Error value whose Code is the primary
// result code.
func isCorrupt(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.Code == sqlite3.ErrCorrupt || se.Code == sqlite3.ErrNotADB)
}

// migrate applies every migration in fsys/dir numbered above the current
// PRAGMA user_version, each in its own transaction.
func migrate(ctx context.Context, db *sql.DB, fsys fs.FS, dir string) error {
	names, err := fs.Glob(fsys, dir+"/*.sql")
	if err != nil {
		return fmt.Errorf("list migrations: %w", err)
	}
	sort.Strings(names)
	type step struct {
		version int
		name    string
	}
	var steps []step
	for _, n := range names {
		base := filepath.Base(n)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return fmt.Errorf("migration %s: name must be NNNN_name.sql", n)
		}
		// Numbers run 1, 2, 3… with no gap and no repeat: a second file
		// with a number already applied would never run.
		if v != len(steps)+1 {
			return fmt.Errorf("migration %s: number %d, want %d (one file per number, no gaps)", n, v, len(steps)+1)
		}
		steps = append(steps, step{v, n})
	}
	var current int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&current); err != nil {
		if isCorrupt(err) {
			return fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		return fmt.Errorf("read user_version: %w", err)
	}
	if len(steps) > 0 && current > steps[len(steps)-1].version {
		return fmt.Errorf("%w: file has version %d, binary knows %d", ErrNewerSchema, current, steps[len(steps)-1].version)
	}
	for _, s := range steps {
		if s.version <= current {
			continue
		}
		body, err := fs.ReadFile(fsys, s.name)
		if err != nil {
			return fmt.Errorf("migration %s: %w", s.name, err)
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("migration %s: begin: %w", s.name, err)
		}
		if _, err := tx.ExecContext(ctx, string(body)); err != nil {
			tx.Rollback()
			return fmt.Errorf("migration %s: %w", s.name, err)
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", s.version)); err != nil {
			tx.Rollback()
			return fmt.Errorf("migration %s: set user_version: %w", s.name, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("migration %s: commit: %w", s.name, err)
		}
	}
	return nil
}

// IsDiskFull reports whether err says the disk (or the user's quota) is
// full: ENOSPC or EDQUOT from a file write, or SQLite's SQLITE_FULL
// ("database or disk is full"). A failed write leaves the state as it was:
// every database change is one transaction, rolled back on error, and an
// item-text file is cut back to its committed size on the next load.
func IsDiskFull(err error) bool {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return true
	}
	var se sqlite3.Error
	return errors.As(err, &se) && se.Code == sqlite3.ErrFull
}
