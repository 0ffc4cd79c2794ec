package api

import (
	"testing"

	"contextd"
	"contextd/coordinator"
)

// TestContextWindowNoteWrites: /context counts the note writes
// (codex-context-note entries) after the branch's latest boundary, the
// number the extension's notes guard decides on; with no boundary it
// counts from the root. Counted by hand from the entries built here.
func TestContextWindowNoteWrites(t *testing.T) {
	const sid = "0190a000-0000-7000-8000-0000000a0e5e"
	b := newSessionBuilder(sid)
	b.user("start")
	b.note("write_file", "plan.md", "v1", 1785578400000)
	noBoundaryLeaf := b.note("append_to_file", "plan.md", "more", 1785578401000)
	b.boundary(0, "w0", "w0", "")
	b.note("write_file", "plan.md", "v2", 1785578402000)
	b.note("write_file", "todo.md", "x", 1785578403000)
	b.boundary(1, "w0", "w1", "w0")
	b.user("next")
	afterBoundary := b.leaf
	b.note("append_to_file", "todo.md", "y", 1785578404000)
	s := newTestServer(t, serverOptions{})
	s.writeFile("notes.jsonl", b.bytes())
	if r := s.register(sid, "notes.jsonl", contextd.ModeLocal); r.Status >= 300 {
		t.Fatalf("register: %d %s", r.Status, r.Body)
	}
	for _, tc := range []struct {
		leaf string
		want int
	}{{"", 1}, {afterBoundary, 0}, {noBoundaryLeaf, 2}} {
		var ans coordinator.ContextAnswer
		s.mustOK("/v1/sessions/"+sid+"/context", map[string]any{"leaf_id": tc.leaf}, &ans)
		if ans.WindowNoteWrites != tc.want {
			t.Errorf("leaf %q: window_note_writes = %d, want %d", tc.leaf, ans.WindowNoteWrites, tc.want)
		}
	}
}
