package api

import (
	"encoding/json"
	"net/http"
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

// TestNotesSearchQueryLoneSurrogateIsFFFD: notes keep encoding/json's
// rule (a lone surrogate escape is U+FFFD) for the note text of the
// session file and for the query alike, so "\ud83d moon" and "\ufffd
// moon" find the same line of the note written with "half \ud83d moon"
// (api/searchquery.go; notes.DecodeEvent).
func TestNotesSearchQueryLoneSurrogateIsFFFD(t *testing.T) {
	s := newTestServer(t, serverOptions{})
	loneSurrogateSession(s)
	want := `{"source":"pi-session","files":[{"path":"/root/notes/moon.md","matches":[{"line_number":1,"line":"half ` + "\uFFFD" + ` moon"}]}]}`
	for _, q := range []string{`"\ud83d moon"`, `"\ufffd moon"`, "\"\uFFFD moon\""} {
		r := s.codex("notes/search_contents", "lone-query", "", map[string]any{"query": json.RawMessage(q)})
		if r.Status != http.StatusOK || string(r.Body) != want {
			t.Errorf("query %s: %d\n got %s\nwant %s", q, r.Status, r.Body, want)
		}
	}
}
