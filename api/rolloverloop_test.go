package api

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"contextd"
)

// TestRolloverLoopRoute: GET /v1/sessions/{id}/rollover_loop pages the
// window ids of a 30-window loop with the cursor GET /v1/sessions/{id}
// gives (w30…w6 there, then w5…w1 with no further cursor), and a bad
// request says what to fix (docs/api.md): a cursor contextd did not
// issue → 400 bad_request naming next_cursor; limit 0 or 101 → 422 naming
// limit; a cursor over 64 characters → 422. Every answer is checked
// against the OpenAPI document (specChecked).
func TestRolloverLoopRoute(t *testing.T) {
	const id = "0195e000-0000-7000-8000-00000000100b"
	b := newSessionBuilder(id)
	b.boundary(0, "w0", "w0", "")
	b.user("start")
	for i := 1; i <= 31; i++ {
		call := fmt.Sprintf("call-%d", i)
		b.assistant(map[string]any{"type": "toolCall", "id": call, "name": "new_context", "arguments": map[string]any{}})
		b.toolResult(call, "new_context", "A new context window will start without summarizing conversation history.")
		b.boundary(i, "w0", fmt.Sprintf("w%d", i), fmt.Sprintf("w%d", i-1))
	}
	s := newTestServer(t, serverOptions{})
	s.writeFile("loop.jsonl", b.bytes())
	if r := s.register(id, "loop.jsonl", contextd.ModeLocal); r.Status != http.StatusCreated {
		t.Fatalf("register: %d %s", r.Status, r.Body)
	}
	var st struct {
		RolloverLoop struct {
			Windows    int      `json:"windows"`
			WindowIDs  []string `json:"window_ids"`
			NextCursor string   `json:"next_cursor"`
		} `json:"rollover_loop"`
	}
	s.getJSON("/v1/sessions/"+id, &st)
	loop := st.RolloverLoop
	// w0 held the user message; w1…w30 are closed and empty, w31 is open.
	if loop.Windows != 30 || len(loop.WindowIDs) != 25 || loop.WindowIDs[0] != "w30" || loop.WindowIDs[24] != "w6" || loop.NextCursor == "" {
		t.Fatalf("rollover_loop %+v, want windows 30, w30…w6 and a next_cursor", loop)
	}
	var page struct {
		Windows    int      `json:"windows"`
		WindowIDs  []string `json:"window_ids"`
		NextCursor *string  `json:"next_cursor"`
	}
	s.getJSON("/v1/sessions/"+id+"/rollover_loop?cursor="+url.QueryEscape(loop.NextCursor), &page)
	if page.Windows != 30 || strings.Join(page.WindowIDs, " ") != "w5 w4 w3 w2 w1" || page.NextCursor != nil {
		t.Errorf("second page %+v, want w5…w1 and no next_cursor", page)
	}
	base := "/v1/sessions/" + id + "/rollover_loop"
	for _, c := range []struct {
		query  string
		status int
		says   string
	}{
		{"?cursor=bm90LW91cnM", http.StatusBadRequest, "next_cursor"},
		{"?limit=0", http.StatusUnprocessableEntity, "limit"},
		{"?limit=101", http.StatusUnprocessableEntity, "limit"},
		{"?cursor=" + strings.Repeat("A", 65), http.StatusUnprocessableEntity, "cursor"},
	} {
		r := s.get(base + c.query)
		if r.Status != c.status || !strings.Contains(string(r.Body), c.says) {
			t.Errorf("GET %s: %d %s, want %d naming %s", c.query, r.Status, r.Body, c.status, c.says)
		}
	}
}
