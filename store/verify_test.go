package store

import (
	"context"
	"os"
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
