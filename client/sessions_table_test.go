package client

import (
	"bytes"
	"testing"

	"contextd/coordinator"
)

// TestSessionsTableExplainsTheStar: a registered row's mode carries "*"
// and the table ends with one line saying what it means; a table without
// registered rows has no such line. Widths by hand: the longest file
// (b.jsonl, 7 characters) pads the first column, the mode takes 7.
func TestSessionsTableExplainsTheStar(t *testing.T) {
	rows := []coordinator.SessionSummary{
		{File: "/s/a/a.jsonl", Version: 3, Mode: "tree", Registered: true, Indexed: true, Entries: 12},
		{File: "/s/a/b.jsonl", Version: 3, Mode: "local", Indexed: true, Entries: 4},
	}
	var out bytes.Buffer
	if err := WriteSessionsTable(&out, rows); err != nil {
		t.Fatal(err)
	}
	want := "a.jsonl  v3  tree*      12 entries\n" +
		"b.jsonl  v3  local       4 entries\n" +
		"* = mode registered by a Pi session; without *: contextd's default mode (serve --default-mode)\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
	out.Reset()
	if err := WriteSessionsTable(&out, rows[1:]); err != nil {
		t.Fatal(err)
	}
	if want := "b.jsonl  v3  local       4 entries\n"; out.String() != want {
		t.Errorf("without a registered row got\n%s\nwant\n%s", out.String(), want)
	}
}

// TestSessionsTableAwaitingFile: a session /new registered before its
// first message (state awaiting_file, a "missing" problem, version 0, no
// entries; the summary GET /v1/sessions gives) reads "no file yet (…)"
// instead of "v0 … 0 entries  missing the session file does not exist
// yet…". Widths by hand: the first column is 7 ("b.jsonl"), the version
// column 2 spaces, the mode 7.
func TestSessionsTableAwaitingFile(t *testing.T) {
	rows := []coordinator.SessionSummary{
		{File: "/s/a/a.jsonl", Version: 3, Mode: "local", Indexed: true, Entries: 4},
		{File: "/s/a/b.jsonl", Mode: "local", Registered: true, Indexed: true, State: coordinator.StateAwaitingFile,
			Problems: []coordinator.SessionProblem{{Reason: "missing", Detail: "the session file does not exist yet: Pi writes it at the session's first message"}}},
	}
	var out bytes.Buffer
	if err := WriteSessionsTable(&out, rows); err != nil {
		t.Fatal(err)
	}
	want := "a.jsonl  v3  local       4 entries\n" +
		"b.jsonl      local*  no file yet (Pi writes it at the session's first message)\n" +
		RegisteredLegend + "\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}
