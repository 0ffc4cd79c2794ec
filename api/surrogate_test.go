package api

import (
	"net/http"
	"testing"
)

// surrogateLine is a Pi tool result line whose text holds lone surrogate
// escapes (\ud83d, \udc00) next to a pair (\ud83d\ude00 = 😀).
const surrogateLine = `{"type":"message","id":"e0000004","parentId":"e0000003","timestamp":"2026-08-01T10:00:04.000Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":"half \ud83d moon \ud83d\ude00 and \udc00"}],"isError":false,"timestamp":1785578400004}}`

// surrogateJSON is the text as Pi hands it to the model: JSON.parse keeps
// each lone surrogate as one UTF-16 code unit and JSON.stringify writes it
// back as a lower-case \uXXXX escape (ECMA-262 QuoteJSONString, "well-formed
// JSON.stringify"), and the pair as the UTF-8 of U+1F600. The extension
// hands the model JSON.stringify(JSON.parse(answer)) (router.ts
// localRouter), so the answer must hold these escapes. Its length in code
// points: "half " 5, U+D83D 1, " moon " 6, U+1F600 1, " and " 5, U+DC00 1
// = 19.
const surrogateJSON = `"half \ud83d moon 😀 and \udc00"`

// TestLoneSurrogateRoundTrip (issue "exact round trips"): read_item,
// list_items and search_contents answer the lone surrogates of the
// session file as the same escapes, byte for byte, never as U+FFFD, and
// count each as one character.
func TestLoneSurrogateRoundTrip(t *testing.T) {
	s := newTestServer(t, serverOptions{})
	b := newSessionBuilder("surrogates")
	b.boundary(0, "w0", "w0", "")
	b.user("show the moon")
	b.assistant(map[string]any{"type": "toolCall", "id": "c1", "name": "bash", "arguments": map[string]any{"command": "cat moon.txt"}})
	b.lines = append(b.lines, []byte(surrogateLine))
	s.writeFile("surrogates.jsonl", b.bytes())

	r := s.codexOK("history/read_item", "surrogates", "", map[string]any{"window_id": "w0", "item_id": "e0000004"}, nil)
	want := `{"source":"pi-session","item":{"window_id":"w0","item_id":"e0000004","role":"tool","tool_name":"bash","content":` + surrogateJSON + `,"total_chars":19}}`
	if string(r.Body) != want {
		t.Errorf("read_item:\n got %s\nwant %s", r.Body, want)
	}
	// A range that starts at the lone surrogate: the escape, one character.
	r = s.codexOK("history/read_item", "surrogates", "", map[string]any{"window_id": "w0", "item_id": "e0000004", "offset_chars": 5, "limit_chars": 2}, nil)
	want = `{"source":"pi-session","item":{"window_id":"w0","item_id":"e0000004","role":"tool","tool_name":"bash","content":"\ud83d ","total_chars":19,"next_offset_chars":7}}`
	if string(r.Body) != want {
		t.Errorf("read_item range:\n got %s\nwant %s", r.Body, want)
	}
	preview := `{"window_id":"w0","item_id":"e0000004","role":"tool","tool_name":"bash","truncated_content":` + surrogateJSON + `,"content_chars":19}`
	r = s.codexOK("history/list_items", "surrogates", "", map[string]any{"window_id": "w0", "role": "tool"}, nil)
	if want := `{"source":"pi-session","items":[` + preview + `]}`; string(r.Body) != want {
		t.Errorf("list_items:\n got %s\nwant %s", r.Body, want)
	}
	r = s.codexOK("history/search_contents", "surrogates", "", map[string]any{"query": " moon "}, nil)
	if want := `{"source":"pi-session","items":[` + preview + `]}`; r.Status != http.StatusOK || string(r.Body) != want {
		t.Errorf("search_contents:\n got %s\nwant %s", r.Body, want)
	}
}
