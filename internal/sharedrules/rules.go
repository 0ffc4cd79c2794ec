// Package sharedrules renders the rules the Pi extension shares with
// contextd as a TypeScript module, extension/src/generated/rules.ts: Go is
// the one source (coordinator, session, notes), the extension imports the
// generated constants, and TestTypeScriptIsCurrent fails when the committed
// module is stale. Regenerate it with
//
//	go generate ./internal/sharedrules
//
// Besides constants (the boundary guidance text, the custom types, the
// thread-hint cap) the module holds examples Go computed: boundaries
// rendered by coordinator.BoundaryContent and entries judged by
// session.Entry.IsBoundary, which the extension's unit tests
// (extension/test/rules.test.ts) require its own code to reproduce.
package sharedrules

//go:generate sh -c "cd ../.. && go run -tags sqlite_fts5 ./internal/sharedrules/gen > extension/src/generated/rules.ts"

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"contextd"
	"contextd/coordinator"
	"contextd/notes"
	"contextd/session"
)

// BoundarySample is a boundary coordinator.BoundaryContent renders.
type BoundarySample struct {
	Agent    string                     `json:"agent"`
	Identity coordinator.WindowIdentity `json:"identity"`
	Hint     string                     `json:"hint"`
	Content  string                     `json:"content"`
}

// BoundaryCase is one Pi entry and whether session.Entry.IsBoundary holds
// for it.
type BoundaryCase struct {
	Name     string          `json:"name"`
	Entry    json.RawMessage `json:"entry"`
	Boundary bool            `json:"boundary"`
}

// boundarySamples are the inputs of BOUNDARY_SAMPLES: window 0 without a
// hint, and a later window with a previous id and a two-line hint.
var boundarySamples = []BoundarySample{
	{Agent: "/root", Identity: coordinator.WindowIdentity{Protocol: 1, Kind: "window", FirstWindowID: "w-first", CurrentWindowID: "w-first"}},
	{Agent: "/root/worker", Identity: coordinator.WindowIdentity{Protocol: 1, Kind: "window", FirstWindowID: "w-first", CurrentWindowID: "w-third", PreviousWindowID: "w-second", WindowNumber: 2},
		Hint: "Recent notes (up to 5, most-recent first):\n- /root/worker/notes/plan.md"},
}

// boundaryCases are the entries of BOUNDARY_CASES (details of a
// codex-context-window entry; type and customType vary).
var boundaryCases = []struct {
	name, typ, customType, details string
}{
	{"window boundary", "custom_message", session.CustomTypeWindow, `{"protocol":1,"id":"m","contextManagement":{"protocol":1,"kind":"window","firstWindowId":"w0","currentWindowId":"w1","previousWindowId":"w0","windowNumber":1}}`},
	{"reminder", "custom_message", session.CustomTypeWindow, `{"protocol":1,"id":"m","contextManagement":{"protocol":1,"kind":"reminder","firstWindowId":"w0","currentWindowId":"w1","windowNumber":1}}`},
	{"urgent reminder", "custom_message", session.CustomTypeWindow, `{"protocol":1,"id":"m","contextManagement":{"protocol":1,"kind":"urgent","firstWindowId":"w0","currentWindowId":"w1","windowNumber":1}}`},
	{"no current window id", "custom_message", session.CustomTypeWindow, `{"protocol":1,"id":"m","contextManagement":{"protocol":1,"kind":"window","firstWindowId":"w0","windowNumber":0}}`},
	{"no contextManagement", "custom_message", session.CustomTypeWindow, `{"protocol":1,"id":"m"}`},
	{"a custom entry, not a message", "custom", session.CustomTypeWindow, `{"protocol":1,"id":"m","contextManagement":{"protocol":1,"kind":"window","firstWindowId":"w0","currentWindowId":"w1","windowNumber":1}}`},
	{"another custom type", "custom_message", "codex-context-other", `{"protocol":1,"id":"m","contextManagement":{"protocol":1,"kind":"window","firstWindowId":"w0","currentWindowId":"w1","windowNumber":1}}`},
}

// ModeAdviceSample is a mode name and contextd.ModeAdvice of it.
type ModeAdviceSample struct {
	Input  string `json:"input"`
	Advice string `json:"advice"`
}

// modeAdviceInputs are the inputs of MODE_ADVICE_SAMPLES: modes, modes in
// another case, and names that are no mode.
var modeAdviceInputs = []string{"off", "local", "tree", "remote", "TREE", "Local", "rEmOtE", "OFF", "weird", "", " tree", "trees"}

// ModeAdviceSamples records contextd.ModeAdvice of every input.
func ModeAdviceSamples() []ModeAdviceSample {
	out := make([]ModeAdviceSample, len(modeAdviceInputs))
	for i, in := range modeAdviceInputs {
		out[i] = ModeAdviceSample{Input: in, Advice: contextd.ModeAdvice(in)}
	}
	return out
}

// Samples renders every boundary sample with coordinator.BoundaryContent.
func Samples() []BoundarySample {
	out := make([]BoundarySample, len(boundarySamples))
	for i, s := range boundarySamples {
		s.Content = coordinator.BoundaryContent(s.Agent, s.Identity, s.Hint)
		out[i] = s
	}
	return out
}

// Cases parses every boundary case as a line of a Pi session file and
// records session.Entry.IsBoundary.
func Cases() ([]BoundaryCase, error) {
	out := make([]BoundaryCase, len(boundaryCases))
	for i, c := range boundaryCases {
		entry := fmt.Sprintf(`{"type":%q,"id":"e%07d","parentId":null,"timestamp":"2026-08-01T10:00:00.000Z","customType":%q,"content":"x","display":true,"data":{},"details":%s}`,
			c.typ, i+1, c.customType, c.details)
		p := session.Parser{}
		if _, _, skip := p.ParseLine([]byte(`{"type":"session","version":3,"id":"s","timestamp":"2026-08-01T10:00:00.000Z","cwd":"/"}`), 0); skip != session.SkipNone {
			return nil, fmt.Errorf("sharedrules: the header line was skipped (%v)", skip)
		}
		e, _, skip := p.ParseLine([]byte(entry), 100)
		if e == nil {
			return nil, fmt.Errorf("sharedrules: case %q was skipped (%v)", c.name, skip)
		}
		out[i] = BoundaryCase{Name: c.name, Entry: json.RawMessage(entry), Boundary: e.IsBoundary()}
	}
	return out, nil
}

// TypeScript renders extension/src/generated/rules.ts.
func TypeScript() ([]byte, error) {
	cases, err := Cases()
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString("// Code generated by `go generate ./internal/sharedrules` from contextd's Go sources; DO NOT EDIT.\n")
	b.WriteString("// The rules the extension shares with contextd (internal/sharedrules/rules.go).\n\n")
	konst := func(doc, name string, v any) {
		var j bytes.Buffer
		enc := json.NewEncoder(&j)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			panic(err) // constants and fixed structs always marshal
		}
		fmt.Fprintf(&b, "/** %s */\nexport const %s = %s as const;\n\n", doc, name, bytes.TrimSuffix(j.Bytes(), []byte("\n")))
	}
	konst("The <context_window_guidance> text of every boundary (coordinator.Guidance).", "GUIDANCE", coordinator.Guidance)
	konst("customType of window boundaries and reminders, a custom message (session.CustomTypeWindow).", "WINDOW_TYPE", session.CustomTypeWindow)
	konst("customType of one note write or append, a custom entry (session.CustomTypeNote).", "NOTE_TYPE", session.CustomTypeNote)
	konst("customType of the note snapshot a Tree rollover carries, a custom entry (session.CustomTypeNoteSnapshot).", "NOTE_SNAPSHOT_TYPE", session.CustomTypeNoteSnapshot)
	konst("customType of a Tree archive manifest, a custom entry (session.CustomTypeTreeArchive).", "TREE_ARCHIVE_TYPE", session.CustomTypeTreeArchive)
	konst("details.contextManagement.kind of a boundary; other kinds (reminder, urgent) open no window (session.Entry.IsBoundary).", "BOUNDARY_KIND", "window")
	konst("The most UTF-8 bytes a thread hint may have; a longer one is not used (notes.MaxHintBytes).", "MAX_HINT_BYTES", notes.MaxHintBytes)
	konst("Every mode, in the order messages name them; a mode is read exactly as spelled here, lowercase (contextd.Modes, contextd.ParseMode).", "MODES", contextd.Modes)
	konst("Mode names and what a refusal of each says to do (contextd.ModeAdvice; \"\" for a mode): the extension's modeAdvice must agree.", "MODE_ADVICE_SAMPLES", ModeAdviceSamples())
	konst("Boundaries coordinator.BoundaryContent rendered: the extension's boundaryMessage must give the same content.", "BOUNDARY_SAMPLES", Samples())
	konst("Session entries and whether session.Entry.IsBoundary holds: the extension's identityOf must agree.", "BOUNDARY_CASES", cases)
	return []byte(strings.TrimSuffix(b.String(), "\n")), nil
}
