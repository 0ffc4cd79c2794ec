package history

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"contextd/session"
)

const header = `{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/tmp"}`

// parse runs the session parser over a header and the given entry lines and
// returns the entries and decoded bodies.
func parse(t *testing.T, lines ...string) ([]*session.Entry, []*session.Decoded) {
	t.Helper()
	var p session.Parser
	if e, _, skip := p.ParseLine([]byte(header), 0); e != nil || skip != session.SkipNone {
		t.Fatalf("header: %v %v", e, skip)
	}
	var es []*session.Entry
	var ds []*session.Decoded
	for i, l := range lines {
		e, d, skip := p.ParseLine([]byte(l), int64(i+1))
		if skip != session.SkipNone || e == nil {
			t.Fatalf("line %d skipped: %v", i, skip)
		}
		es = append(es, e)
		ds = append(ds, d)
	}
	return es, ds
}

func render1(t *testing.T, line string, calls CallLookup) (Item, bool) {
	t.Helper()
	es, ds := parse(t, line)
	return Render(es[0], ds[0], calls)
}

func TestRenderParts(t *testing.T) {
	line := `{"type":"message","id":"a1","parentId":null,"timestamp":"t","message":{"role":"assistant","content":[` +
		`{"type":"thinking","thinking":"let me think","thinkingSignature":"sig"},` +
		`{"type":"text","text":"Hello <b>&amp;</b>"},` +
		`{"type":"image","data":"AAAA","mimeType":"image/png"},` +
		`{"type":"toolCall","id":"c1","name":"read","arguments":{"path": "a<b>.go",  "n": [1, 2],"s":"\u00e9\n"}},` +
		`{"type":"redacted_thinking","data":"xyz"},` +
		`{"type":"text","text":""}` +
		`],"stopReason":"toolUse"}}`
	it, ok := render1(t, line, nil)
	if !ok {
		t.Fatal("not an item")
	}
	want := "let me think\n" +
		"Hello <b>&amp;</b>\n" +
		"[image image/png]\n" +
		`{"tool":"read","arguments":{"path":"a<b>.go","n":[1,2],"s":"\u00e9\n"}}` + "\n" +
		`{"type":"redacted_thinking","data":"xyz"}` + "\n" +
		""
	if it.Text != want {
		t.Errorf("text\n got %q\nwant %q", it.Text, want)
	}
	// Code points by hand: "let me think" 12, "Hello <b>&amp;</b>" 18,
	// "[image image/png]" 17, the toolCall JSON 71 (escapes \u00e9 and \n
	// kept as written: 6 and 2), the redacted part 41, "" 0, plus 5 "\n":
	// 12+18+17+71+41+0+5 = 164.
	if it.Chars != 164 {
		t.Errorf("chars = %d, want 164", it.Chars)
	}
	if it.Role != RoleAssistant || it.ToolName != "read" || it.ToolNamespace != "" || it.Summary {
		t.Errorf("fields = %+v", it)
	}
}

func TestRenderHandBuiltParts(t *testing.T) {
	// Parts built by hand (Raw nil) and a toolCall without arguments.
	d := &session.Decoded{Message: &session.Message{Role: session.RoleAssistant, Content: session.Content{Parts: []session.Part{
		{Type: "toolCall", ID: "c", Name: "new_context"},
		{Type: "audio", MimeType: "audio/wav"},
		{Type: "toolCall", ID: "d", Name: "x", Namespace: "ns2", Arguments: json.RawMessage(`{}`)},
	}}}}
	it, ok := Render(&session.Entry{Type: session.TypeMessage}, d, nil)
	want := `{"tool":"new_context"}` + "\n" + `{"type":"audio","mimeType":"audio/wav"}` + "\n" + `{"tool":"x","arguments":{}}`
	if !ok || it.Text != want || it.ToolName != "new_context" || it.ToolNamespace != "" {
		t.Errorf("got %+v %v, want text %q", it, ok, want)
	}
}

func TestRenderRoles(t *testing.T) {
	cases := []struct {
		name, line string
		want       Item
		ok         bool
	}{
		{"user string", `{"type":"message","id":"u","parentId":null,"timestamp":"t","message":{"role":"user","content":"hi 👍"}}`,
			Item{Role: "user", Text: "hi 👍", Chars: 4}, true},
		{"user parts", `{"type":"message","id":"u","parentId":null,"timestamp":"t","message":{"role":"user","content":[{"type":"text","text":"look"},{"type":"image","data":"x","mimeType":"image/jpeg"}]}}`,
			Item{Role: "user", Text: "look\n[image image/jpeg]", Chars: 23}, true},
		{"toolResult", `{"type":"message","id":"r","parentId":null,"timestamp":"t","message":{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"file body"}],"isError":false}}`,
			Item{Role: "tool", ToolName: "read", Text: "file body", Chars: 9}, true},
		{"bashExecution", `{"type":"message","id":"b","parentId":null,"timestamp":"t","message":{"role":"bashExecution","command":"git status","output":"clean","exitCode":0,"cancelled":false,"truncated":false,"excludeFromContext":true}}`,
			Item{Role: "user", Text: "Ran `git status`\n```\nclean\n```", Chars: 30}, true},
		{"bashExecution no output", `{"type":"message","id":"b","parentId":null,"timestamp":"t","message":{"role":"bashExecution","command":"true","output":"","exitCode":0}}`,
			Item{Role: "user", Text: "Ran `true`\n(no output)", Chars: 22}, true},
		// Pi renames hookMessage only when migrating a v2 file; in a v3
		// file the role stays unknown (TestRenderHookMessageV2 covers v2).
		{"hookMessage in v3", `{"type":"message","id":"h","parentId":null,"timestamp":"t","message":{"role":"hookMessage","customType":"x","content":"hook text","display":true}}`,
			Item{}, false},
		{"custom_message string", `{"type":"custom_message","id":"m","parentId":null,"timestamp":"t","customType":"codex-context-window","content":"<context_window_reminder>\n14% remaining.\n</context_window_reminder>","display":true}`,
			Item{Role: "developer", Text: "<context_window_reminder>\n14% remaining.\n</context_window_reminder>", Chars: 67}, true},
		{"custom_message blocks", `{"type":"custom_message","id":"m","parentId":null,"timestamp":"t","customType":"x","content":[{"type":"text","text":"one"},{"type":"text","text":"two"},{"type":"image","data":"x","mimeType":"image/gif"}],"display":false}`,
			Item{Role: "developer", Text: "one\ntwo\n[image image/gif]", Chars: 25}, true},
		{"branch_summary", `{"type":"branch_summary","id":"s","parentId":null,"timestamp":"t","fromId":"x","summary":"Did things."}`,
			Item{Role: "assistant", Summary: true, Text: "Did things.", Chars: 11}, true},
		{"custom", `{"type":"custom","id":"c","parentId":null,"timestamp":"t","customType":"codex-context-note","data":{}}`, Item{}, false},
		{"compaction", `{"type":"compaction","id":"c","parentId":null,"timestamp":"t","summary":"s","firstKeptEntryId":"x","tokensBefore":1}`, Item{}, false},
		{"label", `{"type":"label","id":"l","parentId":null,"timestamp":"t","targetId":"x","label":"y"}`, Item{}, false},
		{"model_change", `{"type":"model_change","id":"mc","parentId":null,"timestamp":"t","provider":"p","modelId":"m"}`, Item{}, false},
		{"thinking_level_change", `{"type":"thinking_level_change","id":"tl","parentId":null,"timestamp":"t","thinkingLevel":"high"}`, Item{}, false},
		{"session_info", `{"type":"session_info","id":"si","parentId":null,"timestamp":"t","name":"n"}`, Item{}, false},
		{"unknown type", `{"type":"whatever","id":"w","parentId":null,"timestamp":"t"}`, Item{}, false},
		{"unknown role", `{"type":"message","id":"q","parentId":null,"timestamp":"t","message":{"role":"branchSummary","summary":"x"}}`, Item{}, false},
		{"message not an object", `{"type":"message","id":"q","parentId":null,"timestamp":"t","message":"oops"}`, Item{}, false},
	}
	// The texts RenderTo assembles in its buffer: content of several parts
	// and bash executions; every other text is, in a transient parse, the
	// body's own bytes (buf untouched).
	assembled := map[string]bool{"user parts": true, "bashExecution": true, "bashExecution no output": true, "custom_message blocks": true}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := render1(t, c.line, nil)
			if ok != c.ok || got != c.want {
				t.Errorf("got %+v %v, want %+v %v", got, ok, c.want, c.ok)
			}
			// RenderTo gives the same item, its text returned as bytes,
			// of a plain parse and of a transient one.
			for _, transient := range []bool{false, true} {
				var buf bytes.Buffer
				buf.WriteString("left over") // RenderTo resets buf
				p := session.Parser{}
				if transient {
					p.Scratch = new(session.StringChunks)
				}
				p.ParseLine([]byte(header), 0)
				e, d, _ := p.ParseLine([]byte(c.line), 1)
				got, text, ok := RenderTo(&buf, e, d, nil)
				if got.Text != "" {
					t.Errorf("RenderTo (transient %v): text %q in the item", transient, got.Text)
				}
				if transient && ok && !assembled[c.name] && buf.Len() != 0 {
					t.Errorf("RenderTo (transient): body copied to buf: %q", buf.String())
				}
				got.Text = string(text)
				if ok != c.ok || got != c.want {
					t.Errorf("RenderTo (transient %v): got %+v %v, want %+v %v", transient, got, ok, c.want, c.ok)
				}
			}
		})
	}
	if _, ok := Render(nil, nil, nil); ok {
		t.Error("nil entry rendered")
	}
}

func TestRenderToolFields(t *testing.T) {
	es, ds := parse(t,
		// 0: flat notes router call: tool_name = action, namespace = notes.
		`{"type":"message","id":"a1","parentId":null,"timestamp":"t","message":{"role":"assistant","content":[{"type":"thinking","thinking":"x"},{"type":"toolCall","id":"c1","name":"notes","arguments":{"action":"write_file","path":"/root/notes/a.md","text":"hi"}},{"type":"toolCall","id":"c2","name":"read","arguments":{"path":"b"}}]}}`,
		// 1: its result.
		`{"type":"message","id":"r1","parentId":"a1","timestamp":"t","message":{"role":"toolResult","toolCallId":"c1","toolName":"notes","content":[{"type":"text","text":"ok"}]}}`,
		// 2: result of the second call (plain tool).
		`{"type":"message","id":"r2","parentId":"r1","timestamp":"t","message":{"role":"toolResult","toolCallId":"c2","toolName":"read","content":"body"}}`,
		// 3: flat history router call.
		`{"type":"message","id":"a2","parentId":"r2","timestamp":"t","message":{"role":"assistant","content":[{"type":"toolCall","id":"c3","name":"history","arguments":{"action":"search_contents","query":"x"}}]}}`,
		// 4: router call whose action is not a string: stays history, no namespace.
		`{"type":"message","id":"a3","parentId":"a2","timestamp":"t","message":{"role":"assistant","content":[{"type":"toolCall","id":"c4","name":"history","arguments":{"action":7}}]}}`,
		// 5: namespaced call (Responses transport).
		`{"type":"message","id":"a4","parentId":"a3","timestamp":"t","message":{"role":"assistant","content":[{"type":"toolCall","id":"c5","name":"list_items","namespace":"history","arguments":{"limit":3}}]}}`,
		// 6: result of the namespaced call.
		`{"type":"message","id":"r5","parentId":"a4","timestamp":"t","message":{"role":"toolResult","toolCallId":"c5","toolName":"list_items","content":"[]"}}`,
		// 7: result of a router call whose toolCall is unknown.
		`{"type":"message","id":"r9","parentId":"r5","timestamp":"t","message":{"role":"toolResult","toolCallId":"zz","toolName":"history","content":"?"}}`,
		// 8: result of history c3.
		`{"type":"message","id":"r3","parentId":"r9","timestamp":"t","message":{"role":"toolResult","toolCallId":"c3","toolName":"history","content":"{}"}}`,
		// 9: result of c4 (router call without a string action).
		`{"type":"message","id":"r4","parentId":"r3","timestamp":"t","message":{"role":"toolResult","toolCallId":"c4","toolName":"history","content":"{}"}}`,
	)
	recorded := map[string]Call{}
	for _, d := range ds {
		for _, c := range Calls(d) {
			recorded[c.ID] = c.Call
		}
	}
	wantCalls := map[string]Call{
		"c1": {Name: "notes", Action: "write_file"},
		"c2": {Name: "read"},
		"c3": {Name: "history", Action: "search_contents"},
		"c4": {Name: "history"},
		"c5": {Name: "list_items", Namespace: "history"},
	}
	if len(recorded) != len(wantCalls) {
		t.Errorf("calls = %+v", recorded)
	}
	for id, w := range wantCalls {
		if recorded[id] != w {
			t.Errorf("call %s = %+v, want %+v", id, recorded[id], w)
		}
	}
	lookup := func(id string) (Call, bool) { c, ok := recorded[id]; return c, ok }
	want := []struct{ name, ns string }{
		{"write_file", "notes"},
		{"write_file", "notes"},
		{"read", ""},
		{"search_contents", "history"},
		{"history", ""},
		{"list_items", "history"},
		{"list_items", "history"},
		{"history", ""},
		{"search_contents", "history"},
		{"history", ""},
	}
	for i := range es {
		it, ok := Render(es[i], ds[i], lookup)
		if !ok || it.ToolName != want[i].name || it.ToolNamespace != want[i].ns {
			t.Errorf("entry %d (%s): tool %q ns %q, want %q %q", i, es[i].ID, it.ToolName, it.ToolNamespace, want[i].name, want[i].ns)
		}
	}
	// Without a lookup the router result keeps its own tool name.
	if it, _ := Render(es[1], ds[1], nil); it.ToolName != "notes" || it.ToolNamespace != "" {
		t.Errorf("no lookup: %+v", it)
	}
	// Calls of non-assistant messages: none.
	if c := Calls(ds[1]); c != nil {
		t.Errorf("Calls(toolResult) = %+v", c)
	}
	if c := Calls(nil); c != nil {
		t.Errorf("Calls(nil) = %+v", c)
	}
}

func TestChars(t *testing.T) {
	cases := []struct {
		text  string
		chars int
	}{
		{"", 0},
		{"abc", 3},
		{"é", 1},       // U+00E9 precomposed
		{"e\u0301", 2}, // e + combining acute: 2 code points
		{"👍", 1},       // one code point, 4 bytes
		{"👍🏽", 2},      // thumbs up + skin tone modifier
		{"👨‍👩‍👧", 5},   // man ZWJ woman ZWJ girl
		{"世界", 2},      // CJK, 3 bytes each
		{"🇫🇷", 2},      // two regional indicators
		{"a\xffb", 3},  // invalid byte counts as one
		{"héllo 👍 世界 e\u0301", 13},
	}
	for _, c := range cases {
		d := &session.Decoded{Message: &session.Message{Role: "user", Content: session.Content{IsString: true, Text: c.text}}}
		it, _ := Render(&session.Entry{Type: session.TypeMessage}, d, nil)
		if it.Chars != c.chars {
			t.Errorf("%q: chars %d, want %d", c.text, it.Chars, c.chars)
		}
	}
}

// TestRenderHookMessageV2: a v2 file's hookMessage reads as custom
// (migrateV2ToV3) and renders as a developer item.
func TestRenderHookMessageV2(t *testing.T) {
	var p session.Parser
	p.ParseLine([]byte(`{"type":"session","version":2,"id":"s2"}`), 0)
	e, d, skip := p.ParseLine([]byte(`{"type":"message","id":"h","parentId":null,"timestamp":"t","message":{"role":"hookMessage","customType":"x","content":"hook text","display":true}}`), 1)
	if skip != session.SkipNone {
		t.Fatal(skip)
	}
	got, ok := Render(e, d, nil)
	if want := (Item{Role: "developer", Text: "hook text", Chars: 9}); !ok || got != want {
		t.Errorf("got %+v %v, want %+v", got, ok, want)
	}
}

// TestWriteCompactJSON: the fast path (no whitespace outside strings) gives
// exactly what json.Compact gives, and invalid JSON is written as is.
func TestWriteCompactJSON(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"a":1,"b":"x y"}`, `{"a":1,"b":"x y"}`},
		{`{"a": 1, "b": "x y"}`, `{"a":1,"b":"x y"}`},
		{"{\"a\":\"q\\\" \\\\\",\n \"b\":[1, 2]}", `{"a":"q\" \\","b":[1,2]}`},
		{`{"path":"src/a.ts","old":"  if (x) {\n","new":"\t"}`, `{"path":"src/a.ts","old":"  if (x) {\n","new":"\t"}`},
		{`{"a": "unterminated`, `{"a": "unterminated`},
		{`{"a":"x\"}`, `{"a":"x\"}`},
		{`[1, 2`, `[1, 2`},
		{` "s" `, `"s"`},
	} {
		var b strings.Builder
		writeCompactJSON(&b, []byte(tc.in))
		if b.String() != tc.want {
			t.Errorf("writeCompactJSON(%q) = %q, want %q", tc.in, b.String(), tc.want)
		}
	}
	if got := jsonString(`read`); got != `"read"` {
		t.Errorf("jsonString(read) = %s", got)
	}
	if got := jsonString("a\"<b>\n"); got != `"a\"<b>\n"` {
		t.Errorf("jsonString = %s", got)
	}
}

// hasLooseSpace agrees with json.Compact on valid JSON: it reports
// whitespace exactly when compacting changes the bytes. The values are
// built from strings ending in runs of 0-4 backslashes before their
// closing quote (escaped quotes inside, spaces inside), with and without
// spaces between tokens.
func TestHasLooseSpaceAgreesWithCompact(t *testing.T) {
	strs := []string{`""`, `"a b"`, `"\""`, `"\\"`, `"\\\""`, `"\\\\"`, `"x\\\\\" y"`, `"\"\\"`, `" "`}
	seps := []string{"", " ", "\n", "\t"}
	for _, a := range strs {
		for _, b := range strs {
			for _, sep := range seps {
				for _, raw := range []string{
					`{` + a + `:` + sep + b + `}`,
					`[` + a + `,` + b + sep + `]`,
					sep + a,
					`{"k":[` + a + `,{"m":` + b + `}]` + sep + `}`,
				} {
					var c bytes.Buffer
					if err := json.Compact(&c, []byte(raw)); err != nil {
						t.Fatalf("test value %q is not JSON: %v", raw, err)
					}
					want := c.String() != raw
					if got := hasLooseSpace([]byte(raw)); got != want {
						t.Errorf("hasLooseSpace(%q) = %v, want %v (json.Compact gives %q)", raw, got, want, c.String())
					}
				}
			}
		}
	}
}
