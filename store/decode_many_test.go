package store

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

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
