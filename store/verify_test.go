package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"hash/crc32"
	"os"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// BenchmarkContentCheck measures the change detection of indexed bytes
// (verify.go) on the generated session (CONTEXTD_BENCH_MB, default 32;
// docs/reliability.md "Detecting changed bytes" quotes a 128 MiB run):
//
//   - sync-unchanged: a Sync of an unchanged file (a stat, no read);
//   - sync-appended: a Sync after Pi appended one line (first-line hash,
//     tail-window CRC, the new line indexed);
//   - tail-crc: the tail-window CRC alone;
//   - sync-touched: a Sync of a file whose mtime moved at the same size
//     (the CRC of every indexed byte, then nothing to index);
//   - full-crc: the CRC of every indexed byte alone.
func BenchmarkContentCheck(b *testing.B) {
	s, _ := benchIndex(b)
	ctx := context.Background()
	f, err := os.Open(s.path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	b.Run("sync-unchanged", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := s.Sync(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("tail-crc", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := tailCRC(f, s.next); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("full-crc", func(b *testing.B) {
		b.SetBytes(s.next)
		for i := 0; i < b.N; i++ {
			if _, err := crcRange(f, 0, 0, s.next); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sync-touched", func(b *testing.B) {
		t0 := time.Now()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			t := t0.Add(time.Duration(i+1) * time.Second)
			if err := os.Chtimes(s.path, t, t); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if err := s.Sync(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sync-appended", func(b *testing.B) {
		w, err := os.OpenFile(s.path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			b.Fatal(err)
		}
		defer w.Close()
		leaf := ""
		s.Read(func(v *View) error { leaf = v.Tree.Leaf(); return nil })
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			id := "bench" + time.Now().Format("150405.000000000")
			if _, err := w.WriteString(`{"type":"message","id":"` + id + `","parentId":"` + leaf + `","timestamp":"2026-11-30T00:00:00.000Z","message":{"role":"user","content":"one more turn"}}` + "\n"); err != nil {
				b.Fatal(err)
			}
			leaf = id
			b.StartTimer()
			if err := s.Sync(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestContentCheckNoFalseAlarm: appends, a touch without a change and a
// restart over an unchanged file never re-index; the check survives a
// restart (no full read then: the stored mtime and ctime match).
func TestContentCheckNoFalseAlarm(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	path := root + "/s.jsonl"
	lines := []string{
		`{"type":"session","version":3,"id":"s-cc","timestamp":"2026-11-30T00:00:00.000Z","cwd":"/w"}`,
		`{"type":"message","id":"a1","parentId":null,"timestamp":"2026-11-30T00:00:01.000Z","message":{"role":"user","content":"first"}}`,
		`{"type":"message","id":"a2","parentId":"a1","timestamp":"2026-11-30T00:00:02.000Z","message":{"role":"user","content":"second"}}`,
	}
	writeLines := func(n int) {
		var b []byte
		for _, l := range lines[:n] {
			b = append(b, l+"\n"...)
		}
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeLines(2)
	dir := t.TempDir()
	x, err := OpenIndex(ctx, root, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := x.Session(path)
	sync := func(want int) {
		t.Helper()
		if err := s.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		n := 0
		s.Read(func(v *View) error { n = v.Tree.Len(); return nil })
		if n != want {
			t.Fatalf("%d entries, want %d", n, want)
		}
	}
	sync(1)
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(lines[2] + "\n")
	f.Close()
	sync(2)
	later := time.Now().Add(time.Hour)
	os.Chtimes(path, later, later)
	sync(2)
	crc := s.check
	x.Close()
	y, err := OpenIndex(ctx, root, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer y.Close()
	s = y.Session(path)
	sync(2)
	if s.check != crc {
		t.Errorf("check after restart %+v, want %+v", s.check, crc)
	}
	for _, m := range []*Metrics{x.metrics, y.metrics} {
		var d dto.Metric
		if err := m.Reindexes.WithLabelValues("changed_in_place").Write(&d); err != nil {
			t.Fatal(err)
		}
		if n := d.GetCounter().GetValue(); n != 0 {
			t.Errorf("%v re-indexes (changed_in_place), want 0", n)
		}
	}
}

// TestContentCheckFromParsedBytes: the change check of a batch is taken
// from the bytes the parser read, so a same-size rewrite of the batch's
// bytes after the parse (the hook runs between parse and check) is
// detected at the next sync, which indexes the new text; at a03e7ac the
// check re-read the file and took the new bytes as indexed.
func TestContentCheckFromParsedBytes(t *testing.T) {
	for _, grow := range []bool{false, true} {
		ctx := context.Background()
		x, s, path, head := twoLineSession(t, "s-pb")
		if err := s.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		old := `{"type":"message","id":"a2","parentId":"a1","timestamp":"2026-11-30T00:00:02.000Z","message":{"role":"user","content":"alpha"}}` + "\n"
		f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		f.WriteString(old)
		f.Close()
		rewritten := []byte(head + strings.Replace(old, "alpha", "omega", 1))
		beforeBatchCheck = func(*Session) {
			beforeBatchCheck = nil
			if err := os.WriteFile(path, rewritten, 0o600); err != nil {
				t.Fatal(err)
			}
			later := time.Now().Add(time.Hour) // a coarse clock may not move the mtime
			os.Chtimes(path, later, later)
		}
		err := s.Sync(ctx)
		beforeBatchCheck = nil
		if err != nil {
			t.Fatal(err)
		}
		// The check holds what was indexed: the old bytes.
		if want := crc32.Checksum([]byte(head+old), castagnoli); s.check.crc != want {
			t.Errorf("grow=%v: check CRC %08x, want %08x (the bytes parsed)", grow, s.check.crc, want)
		}
		if grow {
			f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString(`{"type":"message","id":"a3","parentId":"a2","timestamp":"2026-11-30T00:00:03.000Z","message":{"role":"user","content":"more"}}` + "\n")
			f.Close()
		}
		if err := s.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		var d dto.Metric
		if err := x.metrics.Reindexes.WithLabelValues("changed_in_place").Write(&d); err != nil {
			t.Fatal(err)
		}
		if n := d.GetCounter().GetValue(); n != 1 {
			t.Errorf("grow=%v: %v re-indexes (changed_in_place) after the rewrite, want 1", grow, n)
		}
		cur, _ := os.ReadFile(path)
		if want := crc32.Checksum(cur, castagnoli); s.check.crc != want {
			t.Errorf("grow=%v: check after the re-index %08x, want the file's %08x", grow, s.check.crc, want)
		}
		x.Close()
	}
}

// statFile is an *os.File whose reads are counted.
type statFile struct {
	*os.File
	read int64
}

func (f *statFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	f.read += int64(n)
	return n, err
}

// staleInfo is a stat taken while an append was under way: the new mtime
// with the old size.
type staleInfo struct {
	os.FileInfo
	size  int64
	mtime time.Time
}

func (s staleInfo) Size() int64        { return s.size }
func (s staleInfo) ModTime() time.Time { return s.mtime }

// TestContentCheckAppendCaughtMidWrite: a write(2) that appends sets the
// mtime before it extends the size, so a sync's stat can see the indexed
// size with a new mtime. When the file is larger by the time the check
// runs, the growth rule applies: the tail window is compared (at most
// TailWindow bytes read), not every indexed byte (the 128 MiB session's
// /context paid ~18 ms for that, about once per hundred appends under
// load). A change inside the tail window is still detected; a file that
// kept its size is still read whole.
func TestContentCheckAppendCaughtMidWrite(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	path := root + "/s.jsonl"
	big := strings.Repeat("x", 200<<10) // the indexed bytes: > 3 tail windows
	head := `{"type":"session","version":3,"id":"s-mw","timestamp":"2026-11-30T00:00:00.000Z","cwd":"/w"}` + "\n" +
		`{"type":"message","id":"a1","parentId":null,"timestamp":"2026-11-30T00:00:01.000Z","message":{"role":"user","content":"` + big + `"}}` + "\n" +
		`{"type":"message","id":"a2","parentId":"a1","timestamp":"2026-11-30T00:00:02.000Z","message":{"role":"user","content":"tail text"}}` + "\n"
	more := `{"type":"message","id":"a3","parentId":"a2","timestamp":"2026-11-30T00:00:03.000Z","message":{"role":"user","content":"appended"}}` + "\n"
	for _, c := range []struct {
		name        string
		file        string // the file when the check runs
		changed     bool
		readAtMost  int64
		readAtLeast int64
	}{
		{"append", head + more, false, TailWindow, 1},
		{"append after a change in the tail window", strings.Replace(head, "tail text", "TAIL TEXT", 1) + more, true, TailWindow, 1},
		{"same size, nothing changed", head, false, int64(len(head)), int64(len(head))},
		{"same size, a change before the tail window", strings.Replace(head, "xxxx", "yyyy", 1), true, int64(len(head)), int64(len(head))},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(path, []byte(head), 0o600); err != nil {
				t.Fatal(err)
			}
			x, err := OpenIndex(ctx, root, t.TempDir(), Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close()
			s := x.Session(path)
			if err := s.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			if s.next != int64(len(head)) || !s.check.known {
				t.Fatalf("indexed through %d (check known %v), want %d", s.next, s.check.known, len(head))
			}
			indexed, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(c.file), 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			sf := &statFile{File: f}
			fi := staleInfo{FileInfo: indexed, size: s.next, mtime: indexed.ModTime().Add(time.Second)}
			changed, err := s.changedInPlace(ctx, x.db, sf, fi, false)
			if err != nil {
				t.Fatal(err)
			}
			if changed != c.changed {
				t.Errorf("changed %v, want %v", changed, c.changed)
			}
			if sf.read > c.readAtMost || sf.read < c.readAtLeast {
				t.Errorf("read %d bytes, want %d to %d", sf.read, c.readAtLeast, c.readAtMost)
			}
		})
	}
}

// TestSyncOfUnchangedFileOpensNothing: a sync that finds the file as the
// last sync left it (lstat: same device, inode, size, mtime and ctime)
// opens nothing; an append, a new mtime at the same size and a rewrite of
// the same size whose mtime was set back (its ctime moves) each take the
// full check, which indexes the appended line, finds nothing to do and
// re-indexes the rewritten file, as without the shortcut.
func TestSyncOfUnchangedFileOpensNothing(t *testing.T) {
	ctx := context.Background()
	x, s, path, head := twoLineSession(t, "s-un")
	defer x.Close()
	sync := func(step string, wantOpens int64, wantLeaf string) {
		t.Helper()
		before := sessionOpens.Load()
		if err := s.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if n := sessionOpens.Load() - before; n != wantOpens {
			t.Errorf("%s: %d opens, want %d", step, n, wantOpens)
		}
		if err := s.Read(func(v *View) error {
			if v.State != StateOK || v.Tree == nil || v.Tree.Leaf() != wantLeaf {
				t.Errorf("%s: state %v, leaf %v, want ok and %s", step, v.State, v.Tree != nil && v.Tree.Leaf() == wantLeaf, wantLeaf)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	reindexes := func() float64 {
		var d dto.Metric
		if err := x.metrics.Reindexes.WithLabelValues("changed_in_place").Write(&d); err != nil {
			t.Fatal(err)
		}
		return d.GetCounter().GetValue()
	}
	sync("first sync", 1, "a1")
	sync("unchanged", 0, "a1")
	line := `{"type":"message","id":"a2","parentId":"a1","timestamp":"2026-11-30T00:00:02.000Z","message":{"role":"user","content":"alpha"}}` + "\n"
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(line)
	f.Close()
	sync("after an append", 1, "a2")
	sync("unchanged after the append", 0, "a2")
	later := time.Now().Add(time.Hour) // a coarse clock may not move the mtime
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	sync("new mtime, same bytes", 1, "a2")
	sync("unchanged after the new mtime", 0, "a2")
	if n := reindexes(); n != 0 {
		t.Errorf("%v re-indexes after a new mtime at the same bytes, want 0", n)
	}
	// The same size, another id, and the mtime set back to the last
	// sync's: only the ctime tells (10 ms on: past a coarse clock's tick).
	time.Sleep(10 * time.Millisecond)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(head+strings.Replace(line, `"a2"`, `"b2"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	sync("rewritten at the same size and mtime", 1, "b2")
	if n := reindexes(); n != 1 {
		t.Errorf("%v re-indexes after the rewrite, want 1", n)
	}
}

// twoLineSession writes s.jsonl (a header with id sid and one user
// message, a1; head is those two lines) in a fresh sessions directory and
// opens an index of it; the caller closes the index. Nothing is synced.
func twoLineSession(t *testing.T, sid string) (x *Index, s *Session, path, head string) {
	t.Helper()
	root := t.TempDir()
	path = root + "/s.jsonl"
	head = `{"type":"session","version":3,"id":"` + sid + `","timestamp":"2026-11-30T00:00:00.000Z","cwd":"/w"}` + "\n" +
		`{"type":"message","id":"a1","parentId":null,"timestamp":"2026-11-30T00:00:01.000Z","message":{"role":"user","content":"first"}}` + "\n"
	if err := os.WriteFile(path, []byte(head), 0o600); err != nil {
		t.Fatal(err)
	}
	x, err := OpenIndex(context.Background(), root, t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return x, x.Session(path), path, head
}

// TestAppendReadsTailWindowOnce: the sync of an appended line reads the
// indexed bytes once for its change check (the tail window, compared with
// the stored CRC; its first batch takes the new window's bytes before the
// batch from that read), and the check it stores equals the CRCs of the
// file: the tail window before the new resume offset and every indexed
// byte. A file under a window and one past it.
func TestAppendReadsTailWindowOnce(t *testing.T) {
	ctx := context.Background()
	for _, pad := range []int{0, 2 * TailWindow} {
		x, s, path, head := twoLineSession(t, "s-tail")
		if pad > 0 {
			big := head + `{"type":"message","id":"a0","parentId":"a1","timestamp":"2026-11-30T00:00:01.500Z","message":{"role":"user","content":"` + strings.Repeat("p", pad) + `"}}` + "\n"
			if err := os.WriteFile(path, []byte(big), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(f, `{"type":"message","id":"b%d","parentId":"a1","timestamp":"2026-11-30T00:00:02.000Z","message":{"role":"user","content":"%s"}}`+"\n", i, strings.Repeat("q", 100*i))
			f.Close()
			before := checkReads.Load()
			if err := s.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			if n := checkReads.Load() - before; n != 1 {
				t.Errorf("pad %d, append %d: %d reads of indexed bytes, want 1", pad, i, n)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			r := bytes.NewReader(data)
			tail, _ := tailCRC(r, int64(len(data)))
			crc, _ := crcRange(r, 0, 0, int64(len(data)))
			if s.next != int64(len(data)) || s.check.tail != tail || s.check.crc != crc {
				t.Errorf("pad %d, append %d: next %d tail %08x crc %08x, want %d %08x %08x", pad, i, s.next, s.check.tail, s.check.crc, len(data), tail, crc)
			}
		}
		x.Close()
	}
}

// TestFirstLineHash: the hash is SHA-256 of the first line without its
// "\n", for a line inside the first 4 KiB read and one longer than it; a
// file with no "\n" has none.
func TestFirstLineHash(t *testing.T) {
	for _, n := range []int{0, 300, 4095, 4096, 9000} {
		line := strings.Repeat("h", n)
		got, ok := firstLineHash(strings.NewReader(line + "\nrest\n"))
		if !ok || got != sha256.Sum256([]byte(line)) {
			t.Errorf("line of %d bytes: %x %v, want %x", n, got, ok, sha256.Sum256([]byte(line)))
		}
	}
	if _, ok := firstLineHash(strings.NewReader("no newline")); ok {
		t.Error("a file without a newline has a first-line hash")
	}
}
