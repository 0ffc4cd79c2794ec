package store

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"contextd/history"
	"contextd/migrations"
)

// wtf8Line is a session whose one user message holds esc (a 6-byte JSON
// escape) between "x" and "y".
func wtf8Line(esc string) string {
	return `{"type":"session","version":3,"id":"s-wtf8","timestamp":"2026-12-01T00:00:00.000Z","cwd":"/w"}` + "\n" +
		`{"type":"message","id":"a1","parentId":null,"timestamp":"2026-12-01T00:00:01.000Z","message":{"role":"user","content":"x` + esc + `y"}}` + "\n"
}

// ordinaryLines is a session whose one user message is 40,000+ bytes of
// numbered text: two complete 16 KiB frames, so frame filters are built.
func ordinaryLines() string {
	var b strings.Builder
	for i := 0; b.Len() < 40000; i++ {
		fmt.Fprintf(&b, "line %d abcdefgh ", i)
	}
	return `{"type":"session","version":3,"id":"s-big","timestamp":"2026-12-01T00:00:00.000Z","cwd":"/w"}` + "\n" +
		`{"type":"message","id":"b1","parentId":null,"timestamp":"2026-12-01T00:00:01.000Z","message":{"role":"user","content":"` + b.String() + `"}}` + "\n"
}

// migrationAnswers is what an index answers for the sessions at paths:
// each view (snap) and, per query, the item seqs whose text holds it.
type migrationAnswers struct {
	Snaps  []snapshot
	Search []string
}

func answersOf(t *testing.T, x *Index, paths []string, queries []string) migrationAnswers {
	t.Helper()
	var a migrationAnswers
	for _, p := range paths {
		s := x.Session(p)
		if err := s.Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
		x.filtersIdle()
		a.Snaps = append(a.Snaps, snap(t, s))
		err := s.Read(func(v *View) error {
			var refs []history.ItemRef
			for i := range v.Items {
				if ref, ok := v.Ref(i, "w"); ok {
					refs = append(refs, ref)
				}
			}
			for _, q := range queries {
				var got []string
				if err := v.Texts().Search(q, history.RefList(refs), 0, func(ref history.ItemRef) bool {
					got = append(got, ref.ItemID)
					return true
				}); err != nil {
					return err
				}
				a.Search = append(a.Search, fmt.Sprintf("%s %q: %v", filepath.Base(p), q, got))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return a
}

// textFilesOf maps each file name under texts/ to its bytes.
func textFilesOf(t *testing.T, x *Index) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	for _, n := range textNames(t, x) {
		b, err := os.ReadFile(filepath.Join(x.textDir(), n))
		if err != nil {
			t.Fatal(err)
		}
		m[n] = b
	}
	return m
}

// TestMigration0006ReindexesOldTexts: an index left by a contextd that
// decoded a lone surrogate escape (\ud83d) to U+FFFD is simulated by
// indexing the file with \ufffd in its place (same 6 bytes), then
// writing \ud83d back and storing the new file's content check (CRC-32C,
// mtime, ctime) in its sessions row, as that contextd would have: without
// migration 0006 the reopened index still answers U+FFFD (checked below,
// so the simulation is real). With the index at user_version 5 and 0006
// applied on open, every answer (views, texts, Search over the frame
// filters of a 40,000-byte session) and every file under texts/ equals
// a fresh index of the same files, byte for byte: no stale frame, filter
// or generation is left.
func TestMigration0006ReindexesOldTexts(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	surr, big := filepath.Join(root, "a-surrogate.jsonl"), filepath.Join(root, "b-big.jsonl")
	paths := []string{surr, big}
	queries := []string{"x\xed\xa0\xbdy", "x\uFFFDy", "line 1234 ", "line 2345 abc", "zzz"}
	if err := os.WriteFile(surr, []byte(wtf8Line(`\ufffd`)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(big, []byte(ordinaryLines()), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "index")
	old, err := OpenIndex(ctx, root, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	oldAnswers := answersOf(t, old, paths, queries)
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(textNames(t, &Index{dir: dir})); n < 4 {
		t.Fatalf("old index has %d text files, want frames and filters", n)
	}
	// The file as the old contextd indexed it, its check taken on it.
	newFile := []byte(wtf8Line(`\ud83d`))
	if err := os.WriteFile(surr, newFile, 0o600); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(surr)
	if err != nil {
		t.Fatal(err)
	}
	mtime, ctime := times(fi)
	crc, err := crcRange(bytes.NewReader(newFile), 0, 0, int64(len(newFile)))
	if err != nil {
		t.Fatal(err)
	}
	tail, err := tailCRC(bytes.NewReader(newFile), int64(len(newFile)))
	if err != nil {
		t.Fatal(err)
	}
	setOld := func(version int) {
		db, err := OpenDB(ctx, filepath.Join(dir, "index.db"), migrations.Index, "index")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Writer.ExecContext(ctx, `UPDATE sessions SET indexed_crc=?, tail_crc=?, mtime_ns=?, ctime_ns=? WHERE path=?`, int64(crc), int64(tail), mtime, ctime, surr); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Writer.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", version)); err != nil {
			t.Fatal(err)
		}
	}
	// Without the migration the old answers stay (the test's premise).
	setOld(6)
	stale, err := OpenIndex(ctx, root, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(oldAnswers, answersOf(t, stale, paths, queries)); d != "" {
		t.Fatalf("the simulated old index re-indexed without the migration (-old +got):\n%s", d)
	}
	stale.Close()

	fresh := MustOpenIndex(t, root)
	want := answersOf(t, fresh, paths, queries)
	if !strings.Contains(strings.Join(want.Search, "\n"), "a-surrogate.jsonl \"x\\xed\\xa0\\xbdy\": [") ||
		strings.Contains(want.Search[0], "[]") || cmp.Equal(want, oldAnswers) {
		t.Fatalf("fresh index does not find the lone surrogate: %v", want.Search)
	}

	setOld(5)
	y, err := OpenIndex(ctx, root, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer y.Close()
	if d := cmp.Diff(want, answersOf(t, y, paths, queries)); d != "" {
		t.Errorf("after migration 0006 (-fresh +migrated):\n%s", d)
	}
	if d := cmp.Diff(textFilesOf(t, fresh), textFilesOf(t, y)); d != "" {
		t.Errorf("texts/ after migration 0006 differs from a fresh index (-fresh +migrated):\n%s", d)
	}
}
