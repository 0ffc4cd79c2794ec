package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"os"
	"time"

	"github.com/mattn/go-sqlite3"
)

// Checkpoints of the derived index (index.db), off the request path.
//
// SQLite's automatic checkpoint (PRAGMA wal_autocheckpoint, 1000 pages by
// default) runs inside the COMMIT that takes the WAL past its threshold:
// the commit copies the WAL's pages into the database and syncs it
// (https://www.sqlite.org/wal.html#automatic_checkpoint). The writer
// commits the sync of every appended line, and /context syncs before it
// answers, so one /context in a hundred or so waited for a checkpoint
// (11 ms of one commit on the bench's 128 MiB session, the p99 of the
// "/context p99 under 4 clients of 1-byte searches" row,
// docs/benchmarks.md). The index writer therefore runs with
// wal_autocheckpoint=0, and a checkpointer goroutine with a connection of
// its own runs PRAGMA wal_checkpoint(PASSIVE) every checkpointEvery when
// the WAL was written since its last run. A passive checkpoint takes no
// lock the writer or the readers wait for; the next writer restarts the
// WAL from its start once every frame is in the database and no reader
// reads them (https://www.sqlite.org/c3ref/wal_checkpoint_v2.html). The
// state database (state.go) keeps SQLite's automatic checkpoints: its
// writes are rare, and its durability rules are its own.
//
// The restart of the WAL is the checkpointer's too. Once every frame is
// in the database, SQLite starts the WAL again from its first frame at
// the next write, and that write syncs the WAL's new header (synchronous
// NORMAL, https://www.sqlite.org/pragma.html#pragma_synchronous): left
// to the index writer, the first commit after each checkpoint, a sync of
// an appended line that a /context waits for, took an fsync (1-8 ms on
// the bench VM; a tenth of the commits of the many-clients row were over
// a millisecond, docs/benchmarks.md). So after a checkpoint that copied
// every frame, the checkpointer itself writes once through the writer's
// connection (the database header's user_version, set to its value),
// and the writes after it find the WAL restarted.
//
// A checkpoint runs holding a scan core (scanCores, view.go), as a long
// scan does. It is one cgo call that copies pages and syncs the database
// (12 ms seen on the bench VM), and Go gives back the P of a goroutine in
// a cgo call only when the runtime's monitor takes it (it sleeps up to
// 10 ms between looks): with the other P scanning, a /context waited for
// a P as long (4.4 ms of a traced 7.4 ms /context, the p99 of the row
// above).
//
// Lock order: a scan core, then SQLite's checkpoint lock (its own). The
// checkpointer takes no other Go lock.

// checkpointEvery is how often the checkpointer looks at the WAL (a
// variable for tests).
var checkpointEvery = 250 * time.Millisecond

// checkpointer runs the passive checkpoints of one database.
type checkpointer struct {
	db     *sql.DB       // one read-write connection
	writer *sql.DB       // the database's writer (DB.Writer): the restart's write
	wal    string        // the database's -wal file
	cores  chan struct{} // scanCores when it started
	stop   chan struct{}
	done   chan struct{}
}

// noAutoCheckpoint is a connector whose connections run with
// wal_autocheckpoint=0: their commits never checkpoint.
type noAutoCheckpoint struct {
	d   *sqlite3.SQLiteDriver
	dsn string
}

func newNoAutoCheckpoint(dsn string) noAutoCheckpoint {
	return noAutoCheckpoint{d: &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		_, err := c.Exec("PRAGMA wal_autocheckpoint=0", nil)
		return err
	}}, dsn: dsn}
}

// Connect implements driver.Connector.
func (c noAutoCheckpoint) Connect(context.Context) (driver.Conn, error) { return c.d.Open(c.dsn) }

// Driver implements driver.Connector.
func (c noAutoCheckpoint) Driver() driver.Driver { return c.d }

// startCheckpointer starts the checkpointer of the database at path,
// opened with dsn (read-write).
func startCheckpointer(path, dsn string, writer *sql.DB) (*checkpointer, error) {
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	c := &checkpointer{db: db, writer: writer, wal: path + "-wal", cores: scanCores, stop: make(chan struct{}), done: make(chan struct{})}
	go c.run()
	return c, nil
}

func (c *checkpointer) run() {
	defer close(c.done)
	lowerThisThread("checkpointer") // background work (background.go)
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	var last time.Time
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.tick(&last)
		}
	}
}

// tick checkpoints when the WAL was written since last (its mtime at the
// last checkpoint, updated); it reports whether it ran a checkpoint.
func (c *checkpointer) tick(last *time.Time) bool {
	fi, err := os.Stat(c.wal)
	if err != nil || fi.ModTime().Equal(*last) {
		return false
	}
	select {
	case c.cores <- struct{}{}:
	case <-c.stop:
		return false
	}
	defer func() { <-c.cores }()
	yieldToUrgent()
	frames, done, err := c.checkpoint()
	if err != nil {
		return true
	}
	*last = fi.ModTime()
	if frames > 0 && done == frames && c.restart() == nil {
		// The restart's own write is no reason for the next checkpoint.
		if fi, err := os.Stat(c.wal); err == nil {
			*last = fi.ModTime()
		}
	}
	return true
}

// restart writes the database header's user_version as it is through the
// writer's connection, so that the WAL, every frame of which is in the
// database, starts again from its first frame now (see the top of this
// file).
func (c *checkpointer) restart() error {
	ctx := context.Background()
	conn, err := c.writer.Conn(ctx) // the one writer connection, for the read and the write
	if err != nil {
		return err
	}
	defer conn.Close()
	var v int
	if err := conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return err
	}
	_, err = conn.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version=%d", v))
	return err
}

// checkpoint runs one passive checkpoint; it returns the WAL's frames and
// how many of them are in the database now.
func (c *checkpointer) checkpoint() (frames, done int, err error) {
	var busy int
	err = c.db.QueryRow("PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &done)
	return frames, done, err
}

// close stops the checkpointer and closes its connection.
func (c *checkpointer) close() error {
	close(c.stop)
	<-c.done
	return c.db.Close()
}
