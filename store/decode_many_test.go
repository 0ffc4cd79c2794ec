package store

import (
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
