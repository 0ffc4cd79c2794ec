package store

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"contextd/migrations"
)

// TestIndexCommitsDoNotCheckpoint: the index writer's commits leave every
// frame in the WAL (with SQLite's automatic checkpoint, the commit that
// passed 1000 pages would have copied them into the database and the WAL
// would have restarted); the checkpointer's passive checkpoint then copies
// them all, and the next commit restarts the WAL from its start.
func TestIndexCommitsDoNotCheckpoint(t *testing.T) {
	defer func(d time.Duration) { checkpointEvery = d }(checkpointEvery)
	checkpointEvery = time.Hour // the test runs the checkpoints
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "index.db")
	db, err := OpenDB(ctx, path, migrations.Index, "index")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Writer.ExecContext(ctx, `CREATE TABLE pad (b BLOB)`); err != nil {
		t.Fatal(err)
	}
	var last time.Time
	if !db.ckpt.tick(&last) {
		t.Fatal("no checkpoint after the first write")
	}
	const commits = 1500 // one 4 KiB blob each: at least one page per commit
	for i := 0; i < commits; i++ {
		if _, err := db.Writer.ExecContext(ctx, `INSERT INTO pad VALUES (zeroblob(4000))`); err != nil {
			t.Fatal(err)
		}
	}
	frames, done, err := db.ckpt.checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	if frames < commits || done != frames {
		t.Errorf("WAL of %d frames, %d checkpointed; want at least %d, all", frames, done, commits)
	}
	if _, err := db.Writer.ExecContext(ctx, `INSERT INTO pad VALUES (zeroblob(4000))`); err != nil {
		t.Fatal(err)
	}
	// One row of a 4000-byte blob: the row's pages and the table's
	// b-tree pages above it, a handful of frames.
	if frames, _, err := db.ckpt.checkpoint(); err != nil || frames > 8 {
		t.Errorf("WAL of %d frames after one more commit (%v), want a restarted WAL of at most 8", frames, err)
	}
}

// TestCheckpointerTick: a tick checkpoints only when the WAL was written
// since its last checkpoint.
func TestCheckpointerTick(t *testing.T) {
	defer func(d time.Duration) { checkpointEvery = d }(checkpointEvery)
	checkpointEvery = time.Hour
	ctx := context.Background()
	db, err := OpenDB(ctx, filepath.Join(t.TempDir(), "index.db"), migrations.Index, "index")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var last time.Time
	db.ckpt.tick(&last)
	if db.ckpt.tick(&last) {
		t.Error("a tick with no write since the last checkpoint checkpointed")
	}
	time.Sleep(20 * time.Millisecond) // past the file system's mtime granularity
	if _, err := db.Writer.ExecContext(ctx, `CREATE TABLE pad (b BLOB)`); err != nil {
		t.Fatal(err)
	}
	if !db.ckpt.tick(&last) {
		t.Error("a tick after a write did not checkpoint")
	}
}

// A checkpoint waits for a scan core and runs holding it: with every core
// taken (by 1-byte searches) it does not run, so its cgo call never holds
// the P that /context needs; it runs once a core is free, and gives it
// back.
func TestCheckpointTakesACore(t *testing.T) {
	defer func(d time.Duration) { checkpointEvery = d }(checkpointEvery)
	checkpointEvery = time.Hour
	ctx := context.Background()
	db, err := OpenDB(ctx, filepath.Join(t.TempDir(), "index.db"), migrations.Index, "index")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var last time.Time
	time.Sleep(20 * time.Millisecond) // past the file system's mtime granularity
	if _, err := db.Writer.ExecContext(ctx, `CREATE TABLE pad (b BLOB)`); err != nil {
		t.Fatal(err)
	}
	cores := db.ckpt.cores
	for range cap(cores) {
		cores <- struct{}{}
	}
	ran := make(chan bool, 1)
	go func() { ran <- db.ckpt.tick(&last) }()
	select {
	case <-ran:
		t.Fatal("the checkpoint ran with every scan core taken")
	case <-time.After(200 * time.Millisecond):
	}
	<-cores
	if !<-ran {
		t.Fatal("the checkpoint did not run once a core was free")
	}
	if len(cores) != cap(cores)-1 {
		t.Fatalf("%d cores held after the checkpoint, want %d (it gives its core back)", len(cores), cap(cores)-1)
	}
	for range cap(cores) - 1 {
		<-cores
	}
}

// TestCheckpointerRestartsTheWAL: a tick that checkpoints every frame also
// restarts the WAL (its own write of user_version, value unchanged), so
// that the writer's next commit does not pay for the restart (the new
// header's fsync); and the restart's own write is no reason for another
// checkpoint at the next tick.
func TestCheckpointerRestartsTheWAL(t *testing.T) {
	defer func(d time.Duration) { checkpointEvery = d }(checkpointEvery)
	checkpointEvery = time.Hour // the test runs the ticks
	ctx := context.Background()
	db, err := OpenDB(ctx, filepath.Join(t.TempDir(), "index.db"), migrations.Index, "index")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var version int
	if err := db.Writer.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		t.Fatal(err)
	}
	var last time.Time
	db.ckpt.tick(&last)
	time.Sleep(20 * time.Millisecond) // past the file system's mtime granularity
	if _, err := db.Writer.ExecContext(ctx, `CREATE TABLE pad (b BLOB)`); err != nil {
		t.Fatal(err)
	}
	for range 50 {
		if _, err := db.Writer.ExecContext(ctx, `INSERT INTO pad VALUES (zeroblob(4000))`); err != nil {
			t.Fatal(err)
		}
	}
	if !db.ckpt.tick(&last) {
		t.Fatal("no checkpoint after 51 commits")
	}
	// Without the restart the WAL would still hold the 51 commits' frames
	// (all copied), and the next commit would restart it. With it, the
	// WAL holds the restart's write: page 1.
	frames, done, err := db.ckpt.checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	if frames != 1 || done != 1 {
		t.Errorf("WAL after the tick: %d frames, %d checkpointed; want 1 and 1 (restarted by the tick's write of page 1)", frames, done)
	}
	var v int
	if err := db.Reader.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil || v != version {
		t.Errorf("user_version after the restart: %d (%v), want %d", v, err, version)
	}
	time.Sleep(20 * time.Millisecond)
	if db.ckpt.tick(&last) {
		t.Error("the tick after the restart checkpointed again, with no commit since")
	}
}
