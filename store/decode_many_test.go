package store

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"contextd/bench/sessiongen"
	"contextd/internal/hugemem"
	"contextd/session"
)

// DecodeEachTreeOnly gives every message entry the role, tool call id,
// tool name and stop reason that DecodeEach gives it (the definition),
// without content, from the file and then from its cache; the cache is
// emptied by a reset.
func TestDecodeEachTreeOnly(t *testing.T) {
	s := syncedLocalBasic(t)
	results := 0
	s.Read(func(v *View) error {
		seqs := make([]int, v.Tree.Len())
		for i := range seqs {
			seqs[i] = i
		}
		full := map[int]session.Message{}
		if err := v.DecodeEach(seqs, func(seq int, _ *session.Entry, d *session.Decoded) error {
			if d != nil && d.Message != nil {
				full[seq] = *d.Message
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for pass := range 2 {
			got := 0
			if err := v.DecodeEachTreeOnly(seqs, func(seq int, e *session.Entry, d *session.Decoded) error {
				if e.Seq != seq || e.ID != v.Tree.ID(seq) {
					t.Fatalf("pass %d: entry %d came back as %d (%s)", pass, seq, e.Seq, e.ID)
				}
				want, ok := full[seq]
				if (d.Message != nil) != ok {
					t.Fatalf("pass %d: entry %d: message %v, want %v", pass, seq, d.Message != nil, ok)
				}
				if !ok {
					return nil
				}
				m := d.Message
				if m.Role != want.Role || m.ToolCallID != want.ToolCallID || m.ToolName != want.ToolName || m.StopReason != want.StopReason || m.IsError != want.IsError {
					t.Fatalf("pass %d: entry %d: %+v, want the fields of %+v", pass, seq, *m, want)
				}
				if len(m.Content.Parts) != 0 || m.Content.Text != "" {
					t.Fatalf("pass %d: entry %d kept content", pass, seq)
				}
				if m.ToolCallID != "" {
					got++
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if pass == 1 && got != results {
				t.Fatalf("from the cache %d tool call ids, from the file %d", got, results)
			}
			results = got
		}
		return nil
	})
	if results == 0 {
		t.Fatal("the fixture has no tool result: the call ids went untested")
	}
	if n := len(s.treeDecoded.m); n == 0 {
		t.Fatal("nothing was kept in the tree-only cache")
	}
	s.syncMu.Lock()
	s.mu.Lock()
	s.reset()
	s.syncMu.Unlock()
	if s.treeDecoded.m != nil {
		t.Fatal("a reset left the tree-only cache")
	}
}

// A tree-only decode of a tool result of 3 MiB gives its call id, read
// from the file into memory mapped outside the Go heap and unmapped after
// it (the heap grows by less than the line), then from the cache, whose
// entry holds nothing of the unmapped line (a slice of it would fault).
func TestDecodeEachTreeOnlyLongLine(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	path := filepath.Join(root, "s.jsonl")
	const long = 3 << 20
	text, err := json.Marshal(strings.Repeat("ok  \tpkg/x\t0.01s\n", long/18+1))
	if err != nil {
		t.Fatal(err)
	}
	file := `{"type":"session","version":3,"id":"s-long","timestamp":"2026-11-30T00:00:00.000Z","cwd":"/w"}` + "\n" +
		`{"type":"message","id":"u1","parentId":null,"timestamp":"2026-11-30T00:00:01.000Z","message":{"role":"user","content":"run the tests","timestamp":1}}` + "\n" +
		`{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-11-30T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"call_big","name":"bash","arguments":{"command":"go test ./..."}}],"api":"openai-responses","provider":"openai","model":"gpt-5","stopReason":"toolUse","timestamp":2}}` + "\n" +
		`{"type":"message","id":"r1","parentId":"a1","timestamp":"2026-11-30T00:00:03.000Z","message":{"role":"toolResult","toolCallId":"call_big","toolName":"bash","content":[{"type":"text","text":` + string(text) + `}],"isError":false,"timestamp":3}}` + "\n"
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	s := MustOpenIndex(t, root).Session(path)
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Read(func(v *View) error {
		seq := v.Tree.Len() - 1
		if e := v.Tree.Entry(seq); e.ID != "r1" || e.Length < long {
			t.Fatalf("last entry %s of %d bytes, want r1 of 3 MiB or more", e.ID, e.Length)
		}
		for pass := range 2 {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			id := ""
			if err := v.DecodeEachTreeOnly([]int{seq}, func(_ int, _ *session.Entry, d *session.Decoded) error {
				if d.Message != nil {
					id = d.Message.ToolCallID
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			runtime.ReadMemStats(&after)
			if id != "call_big" {
				t.Errorf("pass %d: tool call id %q, want call_big", pass, id)
			}
			if d := after.TotalAlloc - before.TotalAlloc; d >= long {
				t.Errorf("pass %d: the decode allocated %d bytes on the Go heap, want under %d (the line mapped outside it)", pass, d, long)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestIngestKeepsTreeOnlyDecode: the ingest of a line of hugemem.MinBytes
// or more (a tool result of megabytes) keeps its tree-only decode, taken
// from the ingest's own parse, equal field for field to what a tree-only
// parse of the line from the file gives; DecodeEachTreeOnly of it then
// opens no session file (the pairing of the /context after such an
// append read and scanned the line again for its call id).
func TestIngestKeepsTreeOnlyDecode(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "s.jsonl")
	var buf bytes.Buffer
	if _, err := sessiongen.Generate(&buf, sessiongen.Options{Bytes: 4 << 20, Seed: 5, WindowEvery: 50, Big: []int{hugemem.MinBytes + 5000, 2 << 20}}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	x, s := syncedIndex(t, root, path, "")
	defer x.Close()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = s.Read(func(v *View) error {
		var long []int
		for seq := range v.Tree.Len() {
			if v.Tree.Entry(seq).Length >= hugemem.MinBytes {
				long = append(long, seq)
			}
		}
		if len(long) != 2 {
			t.Fatalf("%d lines of hugemem.MinBytes or more, want the 2 generated", len(long))
		}
		h := v.Tree.Header
		for _, seq := range long {
			e := v.Tree.Entry(seq)
			kept, ok := s.treeDecoded.get(seq, &e)
			if !ok {
				t.Fatalf("seq %d (%d bytes): no tree-only decode kept by the ingest", seq, e.Length)
			}
			var lb []byte
			got, d, err := decodeLine(f, &e, &h, true, &lb)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(kept.e, got) || !reflect.DeepEqual(kept.d, d) {
				t.Fatalf("seq %d: kept\n%+v %+v\nwant the tree-only parse's\n%+v %+v", seq, kept.e, kept.d.Message, got, d.Message)
			}
			if d.Message == nil || d.Message.Role != "toolResult" || d.Message.ToolCallID == "" {
				t.Fatalf("seq %d: %+v, want a tool result with its call id", seq, d.Message)
			}
		}
		before := sessionOpens.Load()
		var ids []string
		if err := v.DecodeEachTreeOnly(long, func(seq int, e *session.Entry, d *session.Decoded) error {
			ids = append(ids, d.Message.ToolCallID)
			return nil
		}); err != nil {
			return err
		}
		if n := sessionOpens.Load() - before; n != 0 || len(ids) != 2 {
			t.Fatalf("DecodeEachTreeOnly of the kept lines opened the session file %d times, gave %d call ids; want 0 and 2", n, len(ids))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
