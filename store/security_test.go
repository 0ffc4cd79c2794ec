package store

// Security tests of docs/security.md for the store: confinement of session-file
// opens, non-regular files, the in-flight line limit, file modes and the
// state-directory lock.

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const (
	fixtureInside  = "../testdata/pi-tree/local-basic.jsonl" // session 019f3776-3d33-70c6-baa2-5155ff71613c
	fixtureOutside = "../testdata/pi-tree/tree-basic.jsonl"  // session 019f3d67-b1fd-7c0a-87d5-9b46277407ba
	insideID       = "019f3776-3d33-70c6-baa2-5155ff71613c"
)

// TestConfinementSwapRace: while a directory of the sessions dir is
// atomically exchanged with a symlink to a directory outside it, no sync
// ever indexes the outside file: the open itself is confined, so a swap
// between the check and the open can only make the read fail (docs/security.md).
func TestConfinementSwapRace(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "sessions")
	inside := filepath.Join(root, "d")
	outside := filepath.Join(base, "outside", "d")
	for _, d := range []string{inside, outside} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(t, fixtureInside, filepath.Join(inside, "s.jsonl"))
	copyFile(t, fixtureOutside, filepath.Join(outside, "s.jsonl"))
	link := filepath.Join(root, "d.link")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	x := MustOpenIndex(t, root)
	s := x.Session(filepath.Join(inside, "s.jsonl"))
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s.SessionID() != insideID {
		t.Fatalf("session id %q before the race", s.SessionID())
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		swapped := false
		for {
			select {
			case <-stop:
				if swapped {
					unix.Renameat2(unix.AT_FDCWD, inside, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE)
				}
				return
			default:
			}
			if err := unix.Renameat2(unix.AT_FDCWD, inside, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE); err != nil {
				t.Errorf("exchange: %v", err)
				return
			}
			swapped = !swapped
		}
	}()
	var leaks, syncs, errs atomic.Int64
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		syncs.Add(1)
		if err := s.Sync(context.Background()); err != nil {
			errs.Add(1)
			continue
		}
		if id := s.SessionID(); id != "" && id != insideID {
			leaks.Add(1)
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("%d syncs during the swap race: %d indexed the outside file, %d errors", syncs.Load(), leaks.Load(), errs.Load())
	if leaks.Load() > 0 || errs.Load() > 0 {
		t.Errorf("%d syncs indexed the file outside the sessions dir and %d failed with an error; want none", leaks.Load(), errs.Load())
	}
	if err := s.Sync(context.Background()); err != nil || s.SessionID() != insideID {
		t.Errorf("after the race: id %q, err %v", s.SessionID(), err)
	}
}

// TestNonRegularNeverOpened: a FIFO (and a FIFO swapped in for an indexed
// file) is reported as not a regular file without blocking (docs/security.md).
func TestNonRegularNeverOpened(t *testing.T) {
	root := t.TempDir()
	copyFile(t, fixtureInside, filepath.Join(root, "a.jsonl"))
	if err := syscall.Mkfifo(filepath.Join(root, "fifo.jsonl"), 0o600); err != nil {
		t.Fatal(err)
	}
	x := MustOpenIndex(t, root)
	done := make(chan error, 1)
	go func() {
		_, err := x.SyncAll(context.Background())
		if err == nil {
			a := x.Session(filepath.Join(root, "a.jsonl"))
			os.Remove(a.Path())
			if err = syscall.Mkfifo(a.Path(), 0o600); err == nil {
				err = a.Sync(context.Background())
			}
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a sync blocked on a FIFO")
	}
	for _, name := range []string{"fifo.jsonl", "a.jsonl"} {
		s := x.Session(filepath.Join(root, name))
		s.Read(func(v *View) error {
			if v.State != StateUnusable || !strings.Contains(v.StateMsg, "not a regular file") {
				t.Errorf("%s: state %q %q, want unreadable, not a regular file", name, v.State, v.StateMsg)
			}
			return nil
		})
	}
}

// rchar is the bytes this process has read (read/pread), from /proc/self/io.
func rchar(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "rchar: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	t.Fatal("no rchar in /proc/self/io")
	return 0
}

// TestRunawayLastLine: an unterminated last line over --max-line-bytes is
// read once, remembered and reported; later syncs read only the new bytes,
// and when the line ends it is skipped as too_long (docs/security.md: a
// 20 GiB sparse last line was re-read on every sync and shown as ok).
func TestRunawayLastLine(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "s.jsonl")
	copyFile(t, fixtureInside, path)
	fi, _ := os.Stat(path)
	head := fi.Size()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"type":"message","junk":"`)
	f.Close()
	const runaway = 64 << 20 // sparse: no disk space used
	if err := os.Truncate(path, head+runaway); err != nil {
		t.Fatal(err)
	}
	x, err := OpenIndex(context.Background(), root, filepath.Join(t.TempDir(), "index"), Options{MaxLineBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	s := x.Session(path)
	ctx := context.Background()
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	n0 := s.Len()
	check := func(when string) {
		t.Helper()
		s.Read(func(v *View) error {
			if v.InFlightTooLong < runaway-1<<20 {
				t.Errorf("%s: in-flight over-limit line not reported (InFlightTooLong %d)", when, v.InFlightTooLong)
			}
			return nil
		})
	}
	check("first sync")
	for i := range 3 {
		f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		f.WriteString("xxxxxxxxxx")
		f.Close()
		before := rchar(t)
		if err := s.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if read := rchar(t) - before; read > 4<<20 {
			t.Errorf("sync %d after 10 appended bytes read %d bytes; the runaway line was read again from its start", i+2, read)
		}
		check("sync " + strconv.Itoa(i+2))
	}
	// The line ends, a good line follows: skipped as too_long, then indexed.
	line := bytes.Clone(jsonlLastLine(t, fixtureInside))
	f, _ = os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString("\"}\n")
	f.Write(line)
	f.WriteString("\n")
	f.Close()
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	s.Read(func(v *View) error {
		if v.Stats.Skipped["too_long"] != 1 || v.InFlightTooLong != 0 {
			t.Errorf("after the line ended: skipped %v, InFlightTooLong %d; want too_long 1 and nothing in flight", v.Stats.Skipped, v.InFlightTooLong)
		}
		return nil
	})
	if s.Len() != n0 {
		// The appended line repeats an id: Pi keeps both, the index too.
		if s.Len() != n0+1 {
			t.Errorf("entries %d, want %d", s.Len(), n0+1)
		}
	}
}

// jsonlLastLine is the last line of a JSONL file.
func jsonlLastLine(t *testing.T, path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	return lines[len(lines)-1]
}

// TestStateFileModes: contextd's own files are readable by the user only:
// databases (and their WAL/SHM) 0600, the directories 0700, also when they
// existed with wider modes (docs/security.md).
func TestStateFileModes(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	unlock, err := LockStateDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	st, err := OpenState(context.Background(), filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.DB.Writer.Exec(`INSERT INTO registrations(session_id, session_file, mode, agent_name, pi_version, registered_at, updated_at) VALUES ('a','b','local','/root','','t','t')`); err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := os.MkdirAll(filepath.Join(dir, "index"), 0o755); err != nil { // an existing, wider one
		t.Fatal(err)
	}
	x, err := OpenIndex(context.Background(), t.TempDir(), filepath.Join(dir, "index"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	want := map[string]os.FileMode{
		dir: 0o700, filepath.Join(dir, "index"): 0o700,
		filepath.Join(dir, "state.db"): 0o600, filepath.Join(dir, "state.db-wal"): 0o600, filepath.Join(dir, "state.db-shm"): 0o600,
		filepath.Join(dir, "index", "index.db"): 0o600, filepath.Join(dir, "lock"): 0o600,
	}
	for p, m := range want {
		fi, err := os.Stat(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if got := fi.Mode().Perm(); got != m {
			t.Errorf("%s: mode %04o, want %04o", p, got, m)
		}
	}
}

// TestStateDirLockSurvivesDeletion: the state-directory lock is an OS lock
// held on open descriptors; deleting <state-dir>/lock does not let a
// second instance in (docs/security.md).
func TestStateDirLockSurvivesDeletion(t *testing.T) {
	dir := t.TempDir()
	unlock, err := LockStateDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LockStateDir(dir); err == nil || !strings.Contains(err.Error(), "another contextd") {
		t.Fatalf("second lock: %v, want another contextd is using it", err)
	}
	if err := os.Remove(filepath.Join(dir, "lock")); err != nil {
		t.Fatal(err)
	}
	if u, err := LockStateDir(dir); err == nil {
		u()
		t.Fatal("a second instance took the state directory after <state-dir>/lock was deleted")
	}
	unlock()
	u, err := LockStateDir(dir)
	if err != nil {
		t.Fatalf("lock after the first instance released it: %v", err)
	}
	u()
}

// TestResolveSwapRace: while a directory of the sessions directory is
// swapped with a symlink to another directory inside it, Resolve answers
// the path, or ErrChanging when a component changed kind between the
// lstat and the readlink of filepath.EvalSymlinks (at a03e7ac: the bare
// "readlink …: invalid argument", which the API answered with a 500 and
// an ERROR log line); never another error.
func TestResolveSwapRace(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "sessions")
	for _, d := range []string{"d", "e"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, d, "s.jsonl"), []byte("{}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(root, "d.link")
	if err := os.Symlink(filepath.Join(root, "e"), link); err != nil {
		t.Fatal(err)
	}
	x, err := OpenIndex(context.Background(), root, t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			unix.Renameat2(unix.AT_FDCWD, filepath.Join(root, "d"), unix.AT_FDCWD, link, unix.RENAME_EXCHANGE)
		}
	}()
	changingSeen, ok := 0, 0
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && changingSeen < 5; {
		_, err := x.Resolve(filepath.Join(root, "d", "s.jsonl"))
		switch {
		case err == nil:
			ok++
		case errors.Is(err, ErrChanging):
			changingSeen++
		case errors.Is(err, fs.ErrNotExist):
		default:
			t.Fatalf("Resolve during the swap: %v (%T), want the path, ErrChanging or not-exist", err, err)
		}
	}
	close(stop)
	<-done
	t.Logf("%d resolved, %d ErrChanging", ok, changingSeen)
	if changingSeen == 0 {
		t.Fatal("the swap never made EvalSymlinks fail within 5 s; the test did not exercise the race")
	}
}
