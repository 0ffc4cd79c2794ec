package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// genLines is a session whose one user message has n bytes of text c:
// more than two 16 KiB frames of item text for n = 40,000.
func genLines(c string, n int) string {
	return `{"type":"session","version":3,"id":"s-gen","timestamp":"2026-12-01T00:00:00.000Z","cwd":"/w"}` + "\n" +
		`{"type":"message","id":"a1","parentId":null,"timestamp":"2026-12-01T00:00:01.000Z","message":{"role":"user","content":"` + strings.Repeat(c, n) + `"}}` + "\n"
}

// textNames lists the names of the files under texts/.
func textNames(t *testing.T, x *Index) []string {
	t.Helper()
	des, err := os.ReadDir(x.textDir())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	slices.Sort(names)
	return names
}

// A reset (the session file rewritten, so re-indexed whole) writes the
// new text under the next generation's names (N.1.s2, N.1.s2x) and
// leaves the files of the text before to a reader of an earlier snapshot
// that had not opened them yet: it reads its own text (40,000 "x"), not
// ErrFileChanged, and the replaced files (N.s2, N.s2x) go when it is
// done. Before generations, the reset removed N.s2 and wrote the new text
// there, and the reader was told the file changed.
func TestResetKeepsFilesOfHeldSnapshot(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	path := filepath.Join(root, "s.jsonl")
	x, s := syncedFile(t, root, path, genLines("x", 40000))
	id := s.fileID
	itemText := func(v *View) (string, error) {
		ref, ok := v.Ref(0, "w")
		if !ok {
			t.Fatal("no item 0")
		}
		return v.Texts().Slice(ref, 0, -1)
	}
	if err := s.Read(func(v *View) error {
		// The file is rewritten in place with other bytes: the sync
		// re-indexes it whole while this reader holds its snapshot.
		if err := os.WriteFile(path, []byte(genLines("y", 40000)), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := s.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		got, err := itemText(v)
		if err != nil {
			t.Fatalf("reading the held snapshot's text after the reset: %v", err)
		}
		if !strings.Contains(got, strings.Repeat("x", 40000)) {
			t.Errorf("the held snapshot's text is not its 40000 x (%d bytes)", len(got))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// The filter builder holds a generation while it builds its filters:
	// once it is idle no reader holds generation 0. The filters of
	// generation 1 may be built or not yet: only its item-text files are
	// certain.
	x.filtersIdle()
	gen1 := fmt.Sprintf("%d.1.", id)
	names := textNames(t, x)
	if !slices.Contains(names, gen1+"s2") || !slices.Contains(names, gen1+"s2x") ||
		slices.ContainsFunc(names, func(n string) bool { return !strings.HasPrefix(n, gen1) }) {
		t.Errorf("files under texts/ after the reader: %q, want those of generation 1 (%s*) only", names, gen1)
	}
	if err := s.Read(func(v *View) error {
		got, err := itemText(v)
		if err != nil {
			return err
		}
		if !strings.Contains(got, strings.Repeat("y", 40000)) {
			t.Errorf("the new snapshot's text is not its 40000 y (%d bytes)", len(got))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// listTextFiles, the listing the disk budget measures and evicts, finds
// every generation of one file id's files and no other id's: for id 7,
// 7.s2, 7.s2x, 7.3.blk and the raw 7.txt, and generation 3 the highest.
func TestListTextFiles(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"7.s2", "7.s2x", "7.3.blk", "7.txt", "70.s2", "17.s2", "7.x.s2", "7.0.s2", "7.2.tmp", "8.1.s2"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	paths, gen, err := listTextFiles(dir, 7)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range paths {
		names = append(names, filepath.Base(p))
	}
	slices.Sort(names)
	if want := []string{"7.3.blk", "7.s2", "7.s2x", "7.txt"}; !slices.Equal(names, want) || gen != 3 {
		t.Errorf("listTextFiles(7) = %q, generation %d; want %q, 3", names, gen, want)
	}
}

// After a reset the session's files are those of generation 1: the disk
// budget counts them (derivedBytes less without them by exactly their
// size) and an eviction removes them.
func TestBudgetCountsAndEvictsGenerations(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	path := filepath.Join(root, "s.jsonl")
	x, s := syncedFile(t, root, path, genLines("x", 40000))
	if err := os.WriteFile(path, []byte(genLines("y", 40000)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	x.filtersIdle() // the filters of generation 1 are built
	names := textNames(t, x)
	var files int64
	for _, n := range names {
		if !strings.HasPrefix(n, fmt.Sprintf("%d.1.", s.fileID)) {
			t.Errorf("file %s under texts/ after the reset, want generation 1's only", n)
		}
		fi, err := os.Stat(filepath.Join(x.textDir(), n))
		if err != nil {
			t.Fatal(err)
		}
		files += fi.Size()
	}
	with, _, err := x.derivedBytes(ctx, s.Path())
	if err != nil {
		t.Fatal(err)
	}
	away := t.TempDir()
	for _, n := range names {
		if err := os.Rename(filepath.Join(x.textDir(), n), filepath.Join(away, n)); err != nil {
			t.Fatal(err)
		}
	}
	without, _, err := x.derivedBytes(ctx, s.Path())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if err := os.Rename(filepath.Join(away, n), filepath.Join(x.textDir(), n)); err != nil {
			t.Fatal(err)
		}
	}
	if files == 0 || with-without != files {
		t.Errorf("derivedBytes counts %d bytes of files, want their %d", with-without, files)
	}
	if _, ok, err := x.evict(ctx, s.Path(), s.used.Load()); err != nil || !ok {
		t.Fatalf("evict: %v, %v", ok, err)
	}
	if names := textNames(t, x); len(names) != 0 {
		t.Errorf("files under texts/ after the eviction: %q, want none", names)
	}
}

// syncedFile writes text to path (a session file under root), opens an
// index of root in a new state directory (closed when the test ends) and
// syncs the session once.
func syncedFile(t *testing.T, root, path, text string) (*Index, *Session) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	x, err := OpenIndex(context.Background(), root, t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	s := x.Session(path)
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	return x, s
}

// A Rebuild removes every file and names the rebuilt text from
// generation 0 again; a generation that a reset replaced before it, still
// held by a reader then, must not remove those names when that reader
// lets go. Here a reader holds generation 0 (40,000 "x"), a rewrite
// moves the session to generation 1 (40,000 "y") and retires 0, and the
// Rebuild writes the "y" text as N.s2 and N.s2x again, generation 0's
// names: after the release they are still there and the text reads
// back.
func TestRebuildAfterHeldRetiredGeneration(t *testing.T) {
	ctx := t.Context()
	root := t.TempDir()
	path := filepath.Join(root, "s.jsonl")
	x, s := syncedFile(t, root, path, genLines("x", 40000))
	x.filtersIdle()
	id := s.fileID
	_, release := s.hold()
	if err := os.WriteFile(path, []byte(genLines("y", 40000)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := x.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	x.filtersIdle()
	if s.fileID != id || s.files == nil || s.files.gen != 0 {
		t.Fatalf("after the rebuild: file id %d, files %+v; want id %d, generation 0 (the names the retired generation had)", s.fileID, s.files, id)
	}
	release()
	for _, ext := range []string{"s2", "s2x"} {
		if p := filepath.Join(x.textDir(), fmt.Sprintf("%d.%s", id, ext)); gone(p) {
			t.Errorf("the release of the generation replaced before the rebuild removed the rebuilt index's %s", filepath.Base(p))
		}
	}
	if err := s.Read(func(v *View) error {
		ref, ok := v.Ref(0, "w")
		if !ok {
			t.Fatal("no item 0")
		}
		got, err := v.Texts().Slice(ref, 0, -1)
		if err != nil {
			return err
		}
		if !strings.Contains(got, strings.Repeat("y", 40000)) {
			t.Errorf("the rebuilt text is not its 40000 y (%d bytes)", len(got))
		}
		return nil
	}); err != nil {
		t.Fatalf("reading the rebuilt text after the release: %v", err)
	}
}
