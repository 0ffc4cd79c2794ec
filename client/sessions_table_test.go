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
