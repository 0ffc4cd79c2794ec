package store

// Benchmarks over a generated Pi session (bench/sessiongen, the same
// generator as bench/run.sh). Size: CONTEXTD_BENCH_MB (default 32 MiB).
//
//	go test -tags sqlite_fts5 -run '^$' -bench . -benchtime 3x ./store
//	go test -tags sqlite_fts5 -run '^$' -bench Ingest -cpuprofile cpu.prof ./store
//	CONTEXTD_BENCH_FILE=/tmp/s.jsonl go test ... (a session from go run ./bench/gen -out /tmp/s.jsonl)

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"contextd/bench/sessiongen"
	"contextd/history"
)

// benchSession writes a generated session into a fresh sessions directory.
// CONTEXTD_BENCH_FILE=FILE uses a session bench/gen wrote instead (its
// directory is the sessions root; FILE.manifest.json its manifest), so
// that a CPU profile holds the benchmark and not the generator.
func benchSession(b *testing.B) (root, path string, m *sessiongen.Manifest) {
	b.Helper()
	if file := os.Getenv("CONTEXTD_BENCH_FILE"); file != "" {
		mb, err := os.ReadFile(file + ".manifest.json")
		if err != nil {
			b.Fatal(err)
		}
		m = new(sessiongen.Manifest)
		if err := json.Unmarshal(mb, m); err != nil {
			b.Fatal(err)
		}
		return filepath.Dir(file), file, m
	}
	mb := 32.0
	if v, err := strconv.ParseFloat(os.Getenv("CONTEXTD_BENCH_MB"), 64); err == nil && v > 0 {
		mb = v
	}
	root = b.TempDir()
	path = filepath.Join(root, "bench.jsonl")
	m, err := sessiongen.WriteFile(path, sessiongen.Options{Bytes: int64(mb * (1 << 20)), Seed: 1, WindowEvery: 400})
	if err != nil {
		b.Fatal(err)
	}
	return root, path, m
}

// benchIndex indexes the generated session once (default options, as
// contextd serve uses them).
func benchIndex(b *testing.B) (*Session, *sessiongen.Manifest) {
	b.Helper()
	root, path, m := benchSession(b)
	x, err := OpenIndex(context.Background(), root, filepath.Join(b.TempDir(), "index"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { x.Close() })
	s := x.Session(path)
	if err := s.Sync(context.Background()); err != nil {
		b.Fatal(err)
	}
	// The search frame filters, which Sync builds in the background.
	if err := s.buildFrameFilters(); err != nil {
		b.Fatal(err)
	}
	return s, m
}

// localView runs fn over the Local history view of the active branch, as
// coordinator.historyView builds it for each request.
func localView(b *testing.B, s *Session, fn func(v *history.View) error) {
	err := s.Read(func(v *View) error {
		seqs, _, err := v.Tree.Branch("")
		if err != nil {
			return err
		}
		return fn(&history.View{Windows: history.LocalWindows(v.Tree, seqs, v.Ref), Texts: v.Texts()})
	})
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkIngest is the cold index of a whole file: a new index, one Sync.
func BenchmarkIngest(b *testing.B) {
	root, path, _ := benchSession(b)
	fi, _ := os.Stat(path)
	b.SetBytes(fi.Size())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		x, err := OpenIndex(context.Background(), root, filepath.Join(b.TempDir(), fmt.Sprint("index", i)), Options{})
		if err != nil {
			b.Fatal(err)
		}
		if err := x.Session(path).Sync(context.Background()); err != nil {
			b.Fatal(err)
		}
		x.Close()
	}
}

// BenchmarkIngestLive indexes the file once per iteration and keeps every
// index open, then reports the live Go heap per index (after a GC) in MiB
// and per JSONL MiB: the memory a served session holds in its tree, item
// table and call map. CONTEXTD_BENCH_HEAPPROFILE=FILE writes a heap
// profile while they are open (go tool pprof -sample_index=inuse_space).
func BenchmarkIngestLive(b *testing.B) {
	root, path, _ := benchSession(b)
	fi, _ := os.Stat(path)
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	b.ResetTimer()
	var keep []*Index
	for i := 0; i < b.N; i++ {
		x, err := OpenIndex(context.Background(), root, filepath.Join(b.TempDir(), fmt.Sprint("index", i)), Options{})
		if err != nil {
			b.Fatal(err)
		}
		if err := x.Session(path).Sync(context.Background()); err != nil {
			b.Fatal(err)
		}
		keep = append(keep, x)
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&ms1)
	live := float64(ms1.HeapAlloc-ms0.HeapAlloc) / float64(b.N) / (1 << 20)
	b.ReportMetric(live, "MiB-live/index")
	b.ReportMetric(live/(float64(fi.Size())/(1<<20)), "MiB-live/JSONL-MiB")
	b.ReportMetric(float64(ms1.Sys)/(1<<20), "MiB-sys")
	writeHeapProfile(b) // what holds the live heap while the indexes are open
	for _, x := range keep {
		x.Close()
	}
}

// BenchmarkCatchUp appends one entry and syncs.
func BenchmarkCatchUp(b *testing.B) {
	s, m := benchIndex(b)
	f, err := os.OpenFile(s.Path(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	leaf := m.LeafID
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := fmt.Sprintf("%08x", 0xf0000000+i)
		fmt.Fprintf(f, `{"type":"message","id":%q,"parentId":%q,"timestamp":"2026-07-07T00:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":"probe %d"}],"timestamp":1783382400000}}`+"\n", id, leaf, i)
		leaf = id
		if err := s.Sync(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSearchNoMatch is search_contents over all windows with a query
// that matches nothing (the whole item-text file is scanned).
func BenchmarkSearchNoMatch(b *testing.B) {
	s, m := benchIndex(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		localView(b, s, func(v *history.View) error {
			res, err := v.Search(history.SearchArgs{Query: m.NoMatch})
			if err == nil && len(res.Items) != 0 {
				err = fmt.Errorf("no-match query found %d items", len(res.Items))
			}
			return err
		})
	}
}

// BenchmarkSearchHit is search_contents over all windows with queries
// that match: a common one ("func ") and pieces of a generated tool result.
func BenchmarkSearchHit(b *testing.B) {
	s, _ := benchIndex(b)
	for _, q := range []string{"func ", "return err", "xq9"} {
		b.Run(q, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				localView(b, s, func(v *history.View) error {
					_, err := v.Search(history.SearchArgs{Query: q})
					return err
				})
			}
		})
	}
}

// BenchmarkSearchShort is search_contents over all windows with queries
// shorter than the 12 bytes of the long search filter (the short filter's
// trigrams serve them): 8-byte and 4-byte pieces of the no-match query
// that match nothing, and 8-byte printable pieces of sampled items'
// texts (each matching at least its item; most match many).
func BenchmarkSearchShort(b *testing.B) {
	s, m := benchIndex(b)
	for _, n := range []int{8, 4} {
		// The pieces that match nothing (a 4-byte piece such as "reco"
		// may well match).
		var pieces []string
		for p := 0; p+n <= len(m.NoMatch); p++ {
			q := m.NoMatch[p : p+n]
			localView(b, s, func(v *history.View) error {
				res, err := v.Search(history.SearchArgs{Query: q})
				if err == nil && len(res.Items) == 0 {
					pieces = append(pieces, q)
				}
				return err
			})
		}
		if len(pieces) == 0 {
			b.Fatalf("every %d-byte piece of %q matches", n, m.NoMatch)
		}
		b.Run(fmt.Sprintf("no-match-%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				q := pieces[i%len(pieces)]
				localView(b, s, func(v *history.View) error {
					res, err := v.Search(history.SearchArgs{Query: q})
					if err == nil && len(res.Items) != 0 {
						err = fmt.Errorf("no-match piece %q found %d items", q, len(res.Items))
					}
					return err
				})
			}
		})
	}
	queries := sampledQueries(b, s, m, 23, 8, 64)
	b.Run("hit-8", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			q := queries[i%len(queries)]
			localView(b, s, func(v *history.View) error {
				res, err := v.Search(history.SearchArgs{Query: q})
				if err == nil && len(res.Items) == 0 {
					err = fmt.Errorf("query %q found nothing", q)
				}
				return err
			})
		}
	})
}

// BenchmarkListItems is list_items with limit 25 in a random window.
func BenchmarkListItems(b *testing.B) {
	s, m := benchIndex(b)
	r := rand.New(rand.NewPCG(1, 2))
	limit := 25
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w := m.Windows[r.IntN(len(m.Windows))]
		localView(b, s, func(v *history.View) error {
			_, err := v.ListItems(history.ListItemsArgs{Limit: &limit, WindowID: &w})
			return err
		})
	}
}

// BenchmarkReadItem is read_item of a random sampled item.
func BenchmarkReadItem(b *testing.B) {
	s, m := benchIndex(b)
	r := rand.New(rand.NewPCG(1, 2))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		it := m.Sample[r.IntN(len(m.Sample))]
		localView(b, s, func(v *history.View) error {
			res, err := v.ReadItem(history.ReadItemArgs{ItemID: it.ItemID, WindowID: it.WindowID})
			if err == nil && res.Item == nil {
				err = fmt.Errorf("read_item %s: item null", it.ItemID)
			}
			return err
		})
	}
}

// BenchmarkReadItemBig reads 8,000 characters from the middle of the
// largest tool result.
func BenchmarkReadItemBig(b *testing.B) {
	s, m := benchIndex(b)
	if len(m.Big) == 0 {
		b.Skip("no huge tool result at this size (CONTEXTD_BENCH_MB >= 32)")
	}
	big := m.Big[0]
	for _, it := range m.Big {
		if it.Bytes > big.Bytes {
			big = it
		}
	}
	off := big.Bytes / 2
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		localView(b, s, func(v *history.View) error {
			_, err := v.ReadItem(history.ReadItemArgs{ItemID: big.ItemID, WindowID: big.WindowID, OffsetChars: &off})
			return err
		})
	}
}

// BenchmarkTreePreview is the first phase of a cold index (preview.go):
// the tree of the whole file, without items, texts or rows; the time
// until a GET /branch can answer.
func BenchmarkTreePreview(b *testing.B) {
	root, path, _ := benchSession(b)
	fi, _ := os.Stat(path)
	b.SetBytes(fi.Size())
	x, err := OpenIndex(context.Background(), root, filepath.Join(b.TempDir(), "index"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		p, err := x.Session(path).buildPreview(context.Background(), f, fi)
		f.Close()
		if err != nil || p == nil || p.tree.Len() == 0 {
			b.Fatal(err)
		}
	}
}

// BenchmarkSearchHitSampled is search_contents over all windows with the
// queries of bench/load's hit rows: 16-byte printable pieces of the first
// 2,000 bytes of sampled items' texts (most match thousands of items, a
// few only a handful). It reports the slowest query's time too.
func BenchmarkSearchHitSampled(b *testing.B) {
	s, m := benchIndex(b)
	queries := sampledQueries(b, s, m, 19, 16, 64)
	var slowest time.Duration
	slowQ := ""
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		q := queries[i%len(queries)]
		t0 := time.Now()
		localView(b, s, func(v *history.View) error {
			res, err := v.Search(history.SearchArgs{Query: q})
			if err == nil && len(res.Items) == 0 {
				err = fmt.Errorf("query %q found nothing", q)
			}
			return err
		})
		if d := time.Since(t0); d > slowest {
			slowest, slowQ = d, q
		}
	}
	b.ReportMetric(float64(slowest)/1e6, "ms-slowest")
	b.Logf("slowest query %q", slowQ)
}

// sampledQueries returns up to count queries of n bytes (n ≤ 32) the way
// bench/load's hit rows take them: printable pieces, without surrounding
// spaces, of the first 2,000 bytes of sampled items' texts (read with
// read_item), from a generator seeded with (13, seed).
func sampledQueries(b *testing.B, s *Session, m *sessiongen.Manifest, seed uint64, n, count int) []string {
	b.Helper()
	r := rand.New(rand.NewPCG(13, seed))
	var queries []string
	localView(b, s, func(v *history.View) error {
		for tries := 0; len(queries) < count && tries < 100*count; tries++ {
			it := m.Sample[r.IntN(len(m.Sample))]
			res, err := v.ReadItem(history.ReadItemArgs{ItemID: it.ItemID, WindowID: it.WindowID})
			if err != nil || res.Item == nil || len(res.Item.Content) < 64 {
				continue
			}
			t := res.Item.Content[:min(len(res.Item.Content), 2000)]
			i := r.IntN(len(t) - 32)
			q := t[i : i+n]
			ok := strings.TrimSpace(q) == q
			for j := 0; j < len(q); j++ {
				ok = ok && q[j] >= 0x20 && q[j] < 0x7f
			}
			if ok {
				queries = append(queries, q)
			}
		}
		return nil
	})
	return queries
}

// fillText is the item text of the first 512 complete frames of a
// generated session (fillBenchText), made once per test binary.
var fillText struct {
	once sync.Once
	text []byte
	err  error
}

// fillBenchText returns the item text of the generated session's first
// frames (at most 512 of them, with the bytes their records read after
// them), as the ingest writes it.
func fillBenchText(b *testing.B) []byte {
	fillText.once.Do(func() {
		root, path, _ := benchSession(b)
		x, err := OpenIndex(context.Background(), root, filepath.Join(os.TempDir(), fmt.Sprintf("fill-index-%d", os.Getpid())), Options{})
		if err != nil {
			fillText.err = err
			return
		}
		defer os.RemoveAll(x.dir)
		defer x.Close()
		s := x.Session(path)
		if fillText.err = s.Sync(context.Background()); fillText.err != nil {
			return
		}
		x.filtersIdle() // the background filter build, not measured here
		s.mu.Lock()
		snap := s.textSnap()
		s.mu.Unlock()
		n := min(framesFilterable(snap.size()), 512)
		fillText.text = make([]byte, (n-1)*frameSize+filterText)
		tr := newTextReader(snap, nil, false)
		defer tr.Close()
		_, fillText.err = tr.ReadAt(fillText.text, 0)
	})
	if fillText.err != nil {
		b.Fatal(fillText.err)
	}
	return fillText.text
}

// BenchmarkFillFilter is the search filters' record fill (fillFilter) over
// the item text of the generated session: MB/s of item text recorded.
func BenchmarkFillFilter(b *testing.B) {
	text := fillBenchText(b)
	n := int64(len(text)-filterText)/frameSize + 1
	sc := new(builderScratch)
	b.SetBytes(n * frameSize)
	b.ResetTimer()
	for range b.N {
		for i := range n {
			fillFilter(&sc.words, text[i*frameSize:])
		}
	}
}

// BenchmarkBuildFrameFilters is the background filter builder (buildFrameFilters)
// over the generated session's first frames: frames read and decoded,
// records filled and written, MB/s of item text.
func BenchmarkBuildFrameFilters(b *testing.B) {
	text := fillBenchText(b)
	x := &Index{dir: b.TempDir()}
	if err := os.MkdirAll(x.textDir(), 0o700); err != nil {
		b.Fatal(err)
	}
	s := &Session{x: x, fileID: 1}
	writeFrames(b, s, text)
	b.SetBytes(framesFilterable(int64(len(text))) * frameSize)
	b.ResetTimer()
	for range b.N {
		if err := s.resetFilters(0); err != nil {
			b.Fatal(err)
		}
		if err := s.buildFrameFilters(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSearchDistinct is search_contents over all windows with a new
// query each time, as bench/load's distinct-query hit rows send them (352
// 16-byte or 8-byte sampled pieces, cycled), over one history view built
// once with its search order, as the coordinator caches them per leaf:
// the cost of the scan, the filters, the frames and the previews, without
// HTTP. With -benchmem it shows the garbage each search leaves.
func BenchmarkSearchDistinct(b *testing.B) {
	s, m := benchIndex(b)
	for _, n := range []int{16, 8} {
		queries := sampledQueries(b, s, m, uint64(20+n), n, 352)
		b.Run(fmt.Sprintf("%d-byte", n), func(b *testing.B) {
			err := s.Read(func(v *View) error {
				seqs, _, err := v.Tree.Branch("")
				if err != nil {
					return err
				}
				hv := &history.View{Windows: history.LocalWindows(v.Tree, seqs, v.Ref), Texts: v.Texts()}
				hv.Ordered = history.SearchOrder(hv)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					q := queries[i%len(queries)]
					res, err := hv.Search(history.SearchArgs{Query: q})
					if err == nil && len(res.Items) == 0 {
						err = fmt.Errorf("query %q found nothing", q)
					}
					if err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkLiveHeap reports the live heap of an indexed session once its
// Local windows, search order and span cache exist, as after the first
// search of a served session (docs/benchmarks.md: at 1 GiB the live heap sat at the
// GC goal of the 128 MiB memory limit): live-MB is runtime/metrics
// /gc/heap/live:bytes after two forced collections, windows-MB the part
// the windows and search order hold (live heap with them minus without).
// With CONTEXTD_BENCH_HEAPPROFILE=FILE it writes a heap profile there
// (go tool pprof -sample_index=inuse_space FILE).
//
//	CONTEXTD_BENCH_MB=1024 go test -tags sqlite_fts5 -run '^$' -bench LiveHeap -benchtime 1x ./store
func BenchmarkLiveHeap(b *testing.B) {
	s, m := benchIndex(b)
	queries := sampledQueries(b, s, m, 36, 16, 4)
	live := func() float64 {
		runtime.GC()
		runtime.GC()
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		metrics.Read(sample)
		return float64(sample[0].Value.Uint64()) / (1 << 20)
	}
	for range b.N {
		before := live()
		var hv *history.View
		err := s.Read(func(v *View) error {
			seqs, _, err := v.Tree.Branch("")
			if err != nil {
				return err
			}
			hv = &history.View{Windows: history.LocalWindows(v.Tree, seqs, v.Ref), Texts: v.Texts()}
			hv.Ordered = history.SearchOrder(hv)
			_, err = hv.Search(history.SearchArgs{Query: queries[0]})
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		after := live()
		writeHeapProfile(b)
		runtime.KeepAlive(hv)
		b.ReportMetric(after, "live-MB")
		b.ReportMetric(after-before, "windows-MB")
		s.mu.Lock()
		slack := float64(cap(s.items)-len(s.items)) * float64(reflect.TypeFor[ItemMeta]().Size()) / (1 << 20)
		s.mu.Unlock()
		b.ReportMetric(slack, "items-slack-MB")
	}
}

// writeHeapProfile writes a heap profile to the file named by
// CONTEXTD_BENCH_HEAPPROFILE, when it is set.
func writeHeapProfile(b *testing.B) {
	b.Helper()
	p := os.Getenv("CONTEXTD_BENCH_HEAPPROFILE")
	if p == "" {
		return
	}
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatal(err)
	}
}
