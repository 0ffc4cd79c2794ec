package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// loneSurrogateSession is a session whose tool results hold "half \ud83d
// moon" (a lone high surrogate escape, as JSON.stringify writes it) and
// "half \ufffd moon" (U+FFFD itself), and whose note /root/notes/moon.md
// (a codex-context-note entry) holds "half \ud83d moon\nfull moon".
func loneSurrogateSession(s *testServer) {
	b := newSessionBuilder("lone-query")
	b.boundary(0, "w0", "w0", "")
	b.user("show the moon")
	result := func(call, text string) {
		b.assistant(map[string]any{"type": "toolCall", "id": call, "name": "bash", "arguments": map[string]any{"command": "cat moon.txt"}})
		b.message(map[string]any{"role": "toolResult", "toolCallId": call, "toolName": "bash",
			"content": []map[string]any{{"type": "text", "text": json.RawMessage(text)}}, "isError": false, "timestamp": 1785578400000 + b.n})
	}
	result("c1", `"half \ud83d moon"`) // e0000004
	result("c2", `"half \ufffd moon"`) // e0000006
	id, parent, ts := b.next()
	b.add(piCustomEntry{Type: "custom", CustomType: "codex-context-note", ID: id, ParentID: parent, Timestamp: ts,
		Data: map[string]any{"protocol": 1, "action": "write", "path": "/root/notes/moon.md", "text": json.RawMessage(`"half \ud83d moon\nfull moon"`), "timestamp": 1785578400009}})
	s.writeFile("lone-query.jsonl", b.bytes())
}

// TestHistorySearchQueryKeepsLoneSurrogate: a history search_contents
// query holding a lone surrogate escape finds the item whose text holds
// the same lone surrogate in the session file, and not the item holding
// U+FFFD; a query of U+FFFD (escaped or not) finds only the latter
// (api/searchquery.go; session/wtf8.go). Previews by hand: "half " 5, the
// surrogate or U+FFFD 1, " moon" 5 = 11 characters; the surrogate is
// answered as its escape.
func TestHistorySearchQueryKeepsLoneSurrogate(t *testing.T) {
	s := newTestServer(t, serverOptions{})
	loneSurrogateSession(s)
	lone := `{"window_id":"w0","item_id":"e0000004","role":"tool","tool_name":"bash","truncated_content":"half \ud83d moon","content_chars":11}`
	fffd := `{"window_id":"w0","item_id":"e0000006","role":"tool","tool_name":"bash","truncated_content":"half ` + "\uFFFD" + ` moon","content_chars":11}`
	for _, tc := range []struct{ query, want string }{
		{`"\ud83d moon"`, lone},
		{`"\uD83D moon"`, lone}, // JSON's hex digits are case-insensitive
		{`"\ufffd moon"`, fffd},
		{"\"\uFFFD moon\"", fffd},
		{`"half "`, lone + "," + fffd},
	} {
		r := s.codex("history/search_contents", "lone-query", "", map[string]any{"query": json.RawMessage(tc.query)})
		if want := `{"source":"pi-session","items":[` + tc.want + `]}`; r.Status != http.StatusOK || string(r.Body) != want {
			t.Errorf("query %s: %d\n got %s\nwant %s", tc.query, r.Status, r.Body, want)
		}
	}
}

// TestNotesLoneSurrogateFromTheFile: a note written to the session file
// without contextd with "half \ud83d moon" keeps its lone surrogate as Pi
// does (notes.DecodeEvent); notes never answer U+FFFD in its place. A
// query holding the same escape finds the line, and the search is refused
// with 422 naming the file, the surrogate and its place (line 1,
// character 6: "half " is 5); so are read_file and the query "half"; a
// query of U+FFFD (escaped or not) finds nothing, as the note holds none
// (api/searchquery.go; notes.MsgFileLoneSurrogate).
func TestNotesLoneSurrogateFromTheFile(t *testing.T) {
	s := newTestServer(t, serverOptions{})
	loneSurrogateSession(s)
	const refusal = `Note /root/notes/moon.md holds a lone surrogate \\ud83d at line 1, character 6 (half of a UTF-16 pair, which a note cannot hold; it was written to the session file without contextd); rewrite the file with write_file`
	for _, q := range []string{`"\ud83d moon"`, `"\uD83D moon"`, `"half"`} {
		r := s.codex("notes/search_contents", "lone-query", "", map[string]any{"query": json.RawMessage(q)})
		if r.Status != http.StatusUnprocessableEntity || !strings.Contains(string(r.Body), refusal) {
			t.Errorf("query %s: %d %s, want 422 %s", q, r.Status, r.Body, refusal)
		}
	}
	for _, q := range []string{`"\ufffd moon"`, "\"\uFFFD moon\""} {
		r := s.codex("notes/search_contents", "lone-query", "", map[string]any{"query": json.RawMessage(q)})
		if want := `{"source":"pi-session","files":[]}`; r.Status != http.StatusOK || string(r.Body) != want {
			t.Errorf("query %s: %d\n got %s\nwant %s", q, r.Status, r.Body, want)
		}
	}
	r := s.codex("notes/read_file", "lone-query", "", map[string]any{"path": "moon.md"})
	if r.Status != http.StatusUnprocessableEntity || !strings.Contains(string(r.Body), refusal) {
		t.Errorf("read_file: %d %s, want 422 %s", r.Status, r.Body, refusal)
	}
}
