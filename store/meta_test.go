package store

import (
	"encoding/json"
	"testing"

	"contextd/session"
)

// TestEncodeMeta: the hand-written encoder writes the bytes json.Marshal
// writes for the same fields (the entries.meta column), and decodeMeta
// reads them back.
func TestEncodeMeta(t *testing.T) {
	entries := []session.Entry{
		{},
		{Role: session.RoleAssistant, StopReason: "toolUse"},
		{Role: session.RoleUser},
		{FromHook: true, EmptySummary: true, Refs: &session.EntryRefs{FromID: "a1b2c3d4"}},
		{Refs: &session.EntryRefs{FirstKeptEntryID: "0000abcd"}, SystemMessage: true},
		{Refs: &session.EntryRefs{TargetID: "t1", Label: `<b> & "q" \ ` + "\x01é"}},
		{Refs: &session.EntryRefs{Name: "my session"}},
		{Refs: &session.EntryRefs{TargetID: "t2"}, Edit: session.EditReplace},
		{Window: &session.WindowMarker{Kind: "window", CurrentWindowID: "w-1", WindowNumber: 2}, Edit: session.EditOmit},
	}
	for _, e := range entries {
		m := entryMeta{e.Role, e.StopReason, e.FromID(), e.FromHook, e.EmptySummary, e.FirstKeptEntryID(), e.TargetID(), e.Label(), e.Name(), e.Window, e.Edit, e.SystemMessage}
		want, _ := json.Marshal(m)
		got := encodeMeta(nil, &e)
		if string(got) != string(want) {
			t.Errorf("encodeMeta = %s, want %s", got, want)
		}
		var back session.Entry
		if err := decodeMeta(string(got), &back); err != nil {
			t.Fatal(err)
		}
		if back.Role != e.Role || back.StopReason != e.StopReason || back.Label() != e.Label() || back.TargetID() != e.TargetID() ||
			back.FromID() != e.FromID() || back.Edit != e.Edit || back.SystemMessage != e.SystemMessage || (back.Window == nil) != (e.Window == nil) {
			t.Errorf("decodeMeta(%s) = %+v, want %+v", got, back, e)
		}
	}
}

// TestStatsAndHeaderJSON: statsJSON writes json.Marshal's bytes (the
// sessions.stats column) with and without skipped lines, and headerJSON
// json.Marshal's bytes of the header it is given, also after the header
// changed.
func TestStatsAndHeaderJSON(t *testing.T) {
	for _, st := range []session.Stats{
		{},
		{Lines: 123456},
		{Lines: 7, Skipped: map[session.SkipReason]int{}},
		{Lines: 9, Skipped: map[session.SkipReason]int{session.SkipTooLong: 2}, Problems: []session.Problem{{Line: 3, Reason: session.SkipTooLong}}},
	} {
		want, _ := json.Marshal(st)
		if got := statsJSON(st); got != string(want) {
			t.Errorf("statsJSON(%+v) = %s, want %s", st, got, want)
		}
	}
	s := &Session{}
	for _, h := range []session.Header{
		{Version: 3, ID: "s1", Timestamp: "2026-11-30T00:00:00.000Z", Cwd: "/w"},
		{Version: 3, ID: "s1", Timestamp: "2026-11-30T00:00:00.000Z", Cwd: "/w"},
		{Version: 3, ID: "s1", Timestamp: "2026-11-30T00:00:00.000Z", Cwd: "/w", ParentSession: "/p<&>.jsonl"},
		{Version: 1, ID: "s2"},
	} {
		want, _ := json.Marshal(h)
		if got := s.headerJSON(h); got != string(want) {
			t.Errorf("headerJSON(%+v) = %s, want %s", h, got, want)
		}
	}
}
