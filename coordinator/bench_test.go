package coordinator

// Benchmarks of whole Service requests (resolve, sync check, branch,
// history view, answer; no HTTP) over a generated Pi session
// (bench/sessiongen, as bench/run.sh). Size: CONTEXTD_BENCH_MB (default 32).
//
//	go test -tags sqlite_fts5 -run '^$' -bench . -benchmem ./coordinator

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"contextd"
	"contextd/bench/sessiongen"
	"contextd/history"
	"contextd/store"
)

// benchService generates a session into a fresh sessions directory, opens
// a Service over it and indexes it once.
func benchService(b *testing.B) (*Service, *sessiongen.Manifest, string) {
	b.Helper()
	mb := 32.0
	if v, err := strconv.ParseFloat(os.Getenv("CONTEXTD_BENCH_MB"), 64); err == nil && v > 0 {
		mb = v
	}
	root := b.TempDir()
	dir := filepath.Join(root, "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, "bench.jsonl")
	m, err := sessiongen.WriteFile(path, sessiongen.Options{Bytes: int64(mb * (1 << 20)), Seed: 1, WindowEvery: 400})
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	idx, err := store.OpenIndex(ctx, dir, filepath.Join(root, "index"), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { idx.Close() })
	st, err := store.OpenState(ctx, filepath.Join(root, "state.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	svc := New(idx, st, contextd.ModeLocal, nil, nil)
	if _, err := svc.Context(ctx, m.SessionID, ContextRequest{}); err != nil {
		b.Fatal(err)
	}
	return svc, m, path
}

// BenchmarkServiceListItems is list_items (limit 25) in a random window.
func BenchmarkServiceListItems(b *testing.B) {
	svc, m, _ := benchService(b)
	r := rand.New(rand.NewPCG(1, 2))
	limit := 25
	cc := CallContext{SessionID: m.SessionID}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w := m.Windows[r.IntN(len(m.Windows))]
		if _, err := svc.ListItems(b.Context(), cc, history.ListItemsArgs{Limit: &limit, WindowID: &w}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkServiceListItemsAfterAppend appends one entry to the session
// before each list_items (limit 25, all windows, newest first): the
// windows of the new branch extend those of the previous one.
func BenchmarkServiceListItemsAfterAppend(b *testing.B) {
	svc, m, path := benchService(b)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	limit, recent := 25, true
	cc := CallContext{SessionID: m.SessionID}
	leaf := m.LeafID
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		leaf = appendUser(b, f, leaf, i)
		if _, err := svc.ListItems(b.Context(), cc, history.ListItemsArgs{Limit: &limit, RecentFirst: &recent}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkServiceReadItem is read_item of a random sampled item.
func BenchmarkServiceReadItem(b *testing.B) {
	svc, m, _ := benchService(b)
	r := rand.New(rand.NewPCG(1, 2))
	cc := CallContext{SessionID: m.SessionID}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		it := m.Sample[r.IntN(len(m.Sample))]
		out, err := svc.ReadItem(b.Context(), cc, history.ReadItemArgs{ItemID: it.ItemID, WindowID: it.WindowID})
		if err != nil {
			b.Fatal(err)
		}
		if out.Item == nil {
			b.Fatalf("read_item %s: item null", it.ItemID)
		}
	}
}

// BenchmarkServiceReadItemBig reads 8,000 characters at random offsets of
// the largest tool result.
func BenchmarkServiceReadItemBig(b *testing.B) {
	svc, m, _ := benchService(b)
	if len(m.Big) == 0 {
		b.Skip("no huge tool result at this size (CONTEXTD_BENCH_MB >= 32)")
	}
	big := m.Big[0]
	for _, it := range m.Big {
		if it.Bytes > big.Bytes {
			big = it
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	cc := CallContext{SessionID: m.SessionID}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		off := r.IntN(big.Bytes)
		if _, err := svc.ReadItem(b.Context(), cc, history.ReadItemArgs{ItemID: big.ItemID, WindowID: big.WindowID, OffsetChars: &off}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkServiceSearchNoMatch is search_contents over all windows with a
// query that matches nothing.
func BenchmarkServiceSearchNoMatch(b *testing.B) {
	svc, m, _ := benchService(b)
	cc := CallContext{SessionID: m.SessionID}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, err := svc.SearchHistory(b.Context(), cc, history.SearchArgs{Query: m.NoMatch})
		if err != nil {
			b.Fatal(err)
		}
		if n := len(out.Items); n != 0 {
			b.Fatalf("no-match query found %d items", n)
		}
	}
}

// BenchmarkServiceContext is POST …/context (default leaf).
func BenchmarkServiceContext(b *testing.B) {
	svc, m, _ := benchService(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := svc.Context(b.Context(), m.SessionID, ContextRequest{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkServiceContextAfterAppend appends one entry (a user message
// answering nothing) before each POST …/context at the new leaf: the
// bench's catch-up row without HTTP.
func BenchmarkServiceContextAfterAppend(b *testing.B) {
	svc, m, path := benchService(b)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	leaf := m.LeafID
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		leaf = appendUser(b, f, leaf, i)
		if _, err := svc.Context(b.Context(), m.SessionID, ContextRequest{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkServiceSearchHitDistinct is search_contents over all windows
// with a new 16-byte query each time, taken from a sampled item's text
// (so it matches at least once and the answer cache never serves it):
// the cold cost of the bench's 32-client hit rows, one at a time.
func BenchmarkServiceSearchHitDistinct(b *testing.B) {
	svc, m, _ := benchService(b)
	cc := CallContext{SessionID: m.SessionID}
	r := rand.New(rand.NewPCG(13, 19))
	var queries []string
	for tries := 0; len(queries) < b.N+1 && tries < 50*(b.N+1); tries++ {
		it := m.Sample[r.IntN(len(m.Sample))]
		limit := 2000
		out, err := svc.ReadItem(b.Context(), cc, history.ReadItemArgs{ItemID: it.ItemID, WindowID: it.WindowID, LimitChars: &limit})
		if err != nil || out.Item == nil || len(out.Item.Content) < 64 {
			continue
		}
		t := out.Item.Content
		i := r.IntN(len(t) - 32)
		q := t[i : i+16]
		ok := true
		for j := 0; j < len(q); j++ {
			ok = ok && q[j] >= 0x20 && q[j] < 0x7f
		}
		if ok && strings.TrimSpace(q) == q {
			queries = append(queries, q)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, err := svc.SearchHistory(b.Context(), cc, history.SearchArgs{Query: queries[i%len(queries)]})
		if err != nil {
			b.Fatal(err)
		}
		if len(out.Items) == 0 {
			b.Fatalf("query %q found nothing", queries[i%len(queries)])
		}
	}
}

// BenchmarkServiceSearchShortAfterAppend appends one entry, answers POST
// …/context at the new leaf, then a 1-byte search_contents (limit 1) at
// it: the work of the bench's "/context p99 under 4 clients of 1-byte
// searches" row per append, without HTTP. Its B/op is what each append
// costs the garbage collector there.
func BenchmarkServiceSearchShortAfterAppend(b *testing.B) {
	svc, m, path := benchService(b)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	cc := CallContext{SessionID: m.SessionID}
	one := 1
	leaf := m.LeafID
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		leaf = appendUser(b, f, leaf, i)
		if _, err := svc.Context(b.Context(), m.SessionID, ContextRequest{}); err != nil {
			b.Fatal(err)
		}
		out, err := svc.SearchHistory(b.Context(), cc, history.SearchArgs{Query: "e", Limit: &one})
		if err != nil {
			b.Fatal(err)
		}
		if len(out.Items) != 1 {
			b.Fatalf("1-byte search found %d items, want 1", len(out.Items))
		}
	}
}

// BenchmarkServiceContextAfterBigAppend appends one tool result of 4 MiB
// of build-log lines (JSON escapes in every line) before each POST
// …/context: the /context requests that make the tail of the bench's
// many-clients row. Its B/op is what such an append costs in memory
// (fresh pages are slow to touch on the bench VM, docs/benchmarks.md).
func BenchmarkServiceContextAfterBigAppend(b *testing.B) {
	svc, m, path := benchService(b)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	r := rand.New(rand.NewPCG(17, 19))
	var log strings.Builder
	for log.Len() < 4<<20 {
		fmt.Fprintf(&log, "ok  \tpkg/%x\t%d.%03ds\tcoverage: %d.%d%% of statements\n", r.Uint32(), r.IntN(9), r.IntN(1000), r.IntN(100), r.IntN(10))
	}
	text, err := json.Marshal(log.String())
	if err != nil {
		b.Fatal(err)
	}
	leaf := m.LeafID
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := fmt.Sprintf("%08x", 0xf0000000+i)
		fmt.Fprintf(f, `{"type":"message","id":%q,"parentId":%q,"timestamp":"2026-07-07T00:00:00.000Z","message":{"role":"toolResult","toolCallId":"call_probe","toolName":"bash","content":[{"type":"text","text":%s}],"isError":false,"timestamp":1783382400000}}`+"\n", id, leaf, text)
		leaf = id
		if _, err := svc.Context(b.Context(), m.SessionID, ContextRequest{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkServiceContextAfterImageAppend appends, before each POST
// …/context, what Pi's read tool writes for an image: a tool result of a
// text part and an image part of 4 MiB of base64 (Pi attaches images of up
// to 4.5 MiB of base64; its text tools cut their output at 50 KB:
// DEFAULT_MAX_BYTES in pi-coding-agent's dist/core/tools/truncate.js, so
// an image is how a Pi session gets an entry of megabytes).
func BenchmarkServiceContextAfterImageAppend(b *testing.B) {
	svc, m, path := benchService(b)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	r := rand.New(rand.NewPCG(17, 19))
	raw := make([]byte, 3<<20)
	for i := range raw {
		raw[i] = byte(r.Uint32())
	}
	// One line, made once; each append writes it with its own id and parent.
	line := fmt.Appendf(nil, `{"type":"message","id":"IIIIIIII","parentId":"PPPPPPPP","timestamp":"2026-07-07T00:00:00.000Z","message":{"role":"toolResult","toolCallId":"call_probe","toolName":"read","content":[{"type":"text","text":"Read image file [image/png]"},{"type":"image","data":%q,"mimeType":"image/png"}],"isError":false,"timestamp":1783382400000}}`+"\n", base64.StdEncoding.EncodeToString(raw))
	idAt, parentAt := bytes.Index(line, []byte("IIIIIIII")), bytes.Index(line, []byte("PPPPPPPP"))
	leaf := m.LeafID
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := fmt.Sprintf("%08x", 0xf0000000+i)
		copy(line[idAt:], id)
		copy(line[parentAt:], leaf)
		if _, err := f.Write(line); err != nil {
			b.Fatal(err)
		}
		leaf = id
		a, err := svc.Context(b.Context(), m.SessionID, ContextRequest{})
		if err != nil {
			b.Fatal(err)
		}
		if a.LeafID != id {
			b.Fatalf("/context leaf %s after appending %s", a.LeafID, id)
		}
	}
}

// appendUser appends to f a user message (a child of leaf, text "probe
// i") and returns its id.
func appendUser(b *testing.B, f *os.File, leaf string, i int) string {
	id := fmt.Sprintf("%08x", 0xf0000000+i)
	if _, err := fmt.Fprintf(f, `{"type":"message","id":%q,"parentId":%q,"timestamp":"2026-07-07T00:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":"probe %d"}],"timestamp":1783382400000}}`+"\n", id, leaf, i); err != nil {
		b.Fatal(err)
	}
	return id
}

// BenchmarkServiceContextAfterPiAppend is the per-session work of the
// bench's many-clients row (bench/load/many.go, no searches, no big
// results) in a full window: one small entry appended before each POST
// …/context at the new leaf, in turn a user message, an assistant
// message without tool calls and a tool result for call_probe (no open
// call: dropped as orphaned). The appends start at the entry before the
// generated session's last boundary, so the window is the full one before
// it (about 400 entries: a window every 400) plus the appends; after
// every 200 appends the next one starts a new branch there again (a
// branch switch), so the window stays that size however large b.N.
func BenchmarkServiceContextAfterPiAppend(b *testing.B) {
	svc, m, path := benchService(b)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if len(m.Boundaries) < 2 {
		b.Skip("fewer than two windows at this size")
	}
	full := m.Boundaries[len(m.Boundaries)-1].ParentID
	leaf := full
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%200 == 0 {
			leaf = full
		}
		leaf = appendProbe(b, f, leaf, i)
		if _, err := svc.Context(b.Context(), m.SessionID, ContextRequest{}); err != nil {
			b.Fatal(err)
		}
	}
}

// appendProbe appends to f a child of leaf as bench/load's probes: by i
// mod 3 a user message, an assistant message (stopReason stop, no tool
// call) or a tool result for call_probe; it returns the entry's id.
func appendProbe(b *testing.B, f *os.File, leaf string, i int) string {
	id := fmt.Sprintf("%08x", 0xe0000000+i)
	var msg string
	switch i % 3 {
	case 0:
		msg = fmt.Sprintf(`{"role":"user","content":[{"type":"text","text":"load probe %d"}],"timestamp":1783382400000}`, i)
	case 1:
		msg = fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":"load probe %d"}],"api":"openai-responses","provider":"openai","model":"gpt-5","stopReason":"stop","timestamp":1783382400000}`, i)
	default:
		msg = fmt.Sprintf(`{"role":"toolResult","toolCallId":"call_probe","toolName":"bash","content":[{"type":"text","text":"load probe %d"}],"isError":false,"timestamp":1783382400000}`, i)
	}
	if _, err := fmt.Fprintf(f, `{"type":"message","id":%q,"parentId":%q,"timestamp":"2026-07-07T00:00:00.000Z","message":%s}`+"\n", id, leaf, msg); err != nil {
		b.Fatal(err)
	}
	return id
}
