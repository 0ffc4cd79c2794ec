package e2e

// Pi's own compaction in Local mode (docs/design.md §5.3.1 row
// "Auto-compaction, manual /compact"), on Pi 0.85.1 and 1.6.0 in RPC mode
// with the faux model: every provider request, the session file and what
// the person is shown.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeSettings writes Pi's settings.json in the rig's agent directory.
func (r *rig) writeSettings(s map[string]any) {
	r.t.Helper()
	b, _ := json.Marshal(s)
	if err := os.WriteFile(filepath.Join(r.agent, "settings.json"), b, 0o600); err != nil {
		r.t.Fatal(err)
	}
}

// compactionScript is the faux model's script of the compaction tests:
// window 0 (a note, then new_context), then window 1's replies.
func compactionScript() []step {
	return []step{
		tool("notes", map[string]any{"action": "write_file", "path": "plan.md", "text": "- WIN0-NOTE\n"}),
		tool("new_context", nil),
		{Text: "W1-REPLY-ONE"}, {Text: "W1-REPLY-TWO"}, {Text: "W1-REPLY-THREE"}, {Text: "W1-REPLY-FOUR"}, {Text: "spare"},
	}
}

// TestPiExtensionCompactionKeepsCurrentWindow: Local, window 0 then window
// 1 with three turns, then Pi compacts, manually (RPC compact, as
// /compact) or automatically at the threshold (reserveTokens leaves 30,000
// tokens; one prompt of window 1 is about 50,000). Pi's summarizer is sent
// window 1's messages only: no request of kind summary holds window 0's
// prompt, note or boundary. The compaction entry keeps an entry after
// window 1's boundary, and the next request starts with that boundary
// (sent again by the extension), then Pi's summary, and holds nothing of
// window 0. The person is told which window was compacted.
func TestPiExtensionCompactionKeepsCurrentWindow(t *testing.T) {
	big := strings.Repeat("W1-BULK ", 25000) // 200,000 characters ≈ 50,000 tokens (Pi's chars/4 estimate)
	for _, how := range []string{"manual", "threshold"} {
		t.Run(how, func(t *testing.T) {
			eachPi(t, func(t *testing.T, v piVersion) {
				r := newRig(t, v, "local", compactionScript())
				settings := map[string]any{"keepRecentTokens": 1}
				if how == "threshold" {
					settings["reserveTokens"] = 170000
				}
				r.writeSettings(map[string]any{"compaction": settings})
				r.startContextd()
				p := r.startPi()
				p.prompt("WIN0-PROMPT: plan the work", 1)
				second := "W1-PROMPT-TWO"
				if how == "threshold" {
					second += " " + big
				}
				p.prompt(second, 2)
				p.prompt("W1-PROMPT-THREE", 3)
				if how == "manual" {
					p.send(map[string]any{"type": "compact", "id": "compact"})
					p.waitFor("the compact response", 60*time.Second, func(evs []map[string]any) bool {
						for _, e := range evs {
							if e["type"] == "response" && e["id"] == "compact" {
								return true
							}
						}
						return false
					})
				} else {
					p.waitFor("the automatic compaction", 60*time.Second, func(evs []map[string]any) bool {
						for _, e := range evs {
							if e["type"] == "compaction_end" {
								return true
							}
						}
						return false
					})
				}
				p.prompt("W1-PROMPT-FOUR", 4)
				_, _, es := r.session()
				bs := boundaries(es)
				if len(bs) != 2 {
					t.Fatalf("boundaries = %d, want window 0 and window 1", len(bs))
				}
				w0, w1 := windowOf(t, bs[0]), windowOf(t, bs[1])
				var comp *entry
				for i := range es {
					if es[i].Type == "compaction" {
						comp = &es[i]
					}
				}
				if comp == nil {
					t.Fatalf("no compaction entry; events %s", summarizeEvents(p.snapshot()))
				}
				afterBoundary := false
				for _, e := range es {
					if e.ID == bs[1].ID {
						afterBoundary = true
					}
					if e.ID == comp.FirstKept {
						if !afterBoundary || e.ID == bs[1].ID {
							t.Errorf("the compaction keeps from %s, not after window 1's boundary %s", e.ID, bs[1].ID)
						}
						break
					}
				}
				// Window 1's boundary names window 0 as first and previous window;
				// only window 0's own boundary says it is current.
				window0 := []string{"WIN0-PROMPT", "WIN0-NOTE", "Current context window id: " + w0.CurrentWindowID}
				summaries := 0
				reqs := r.requests()
				for _, q := range reqs {
					if q.Kind != "summary" {
						continue
					}
					summaries++
					for _, s := range window0 {
						if anyContains(q, s) {
							t.Errorf("a summary request holds %q of window 0", s)
						}
					}
					// Window 1's boundary is sent again, not summarized.
					if anyContains(q, "Current context window id: "+w1.CurrentWindowID) {
						t.Errorf("a summary request holds window 1's boundary")
					}
				}
				if summaries == 0 {
					t.Fatal("no summary request")
				}
				if !anyContainsKind(reqs, "summary", "W1-REPLY-ONE") {
					t.Error("no summary request holds window 1's first reply")
				}
				last := reqs[len(reqs)-1]
				conv := last.conversation()
				if last.Kind != "turn" || len(conv) < 3 {
					t.Fatalf("last request: %s %s", last.Kind, roles(last))
				}
				if !strings.Contains(conv[0].text(), "Current context window id: "+w1.CurrentWindowID) {
					t.Errorf("the request after the compaction starts with %q, want window 1's boundary", conv[0].text())
				}
				if !strings.Contains(conv[1].text(), "Summary ") {
					t.Errorf("the request's second message is %q, want Pi's compaction summary", conv[1].text())
				}
				if got := conv[len(conv)-1].text(); got != "W1-PROMPT-FOUR" {
					t.Errorf("the request ends with %q, want the new prompt", got)
				}
				for _, s := range window0 {
					if anyContains(last, s) {
						t.Errorf("the request after the compaction holds %q of window 0", s)
					}
				}
				want := "contextd: compacting context window 1 only; earlier windows stay readable with the history tool"
				if n := strings.Count(strings.Join(p.notices("info"), "\n"), want); n != 1 {
					t.Errorf("info notices %q: want %q once", p.notices("info"), want)
				}
				checkClean(t, p, reqs)
			})
		})
	}
}

// anyContainsKind reports whether a request of kind holds s.
func anyContainsKind(reqs []request, kind, s string) bool {
	for _, q := range reqs {
		if q.Kind == kind && anyContains(q, s) {
			return true
		}
	}
	return false
}

// TestPiExtensionRemoteCompactionKeepsCurrentWindow: Remote on the Codex
// transport, window 0 (new_context) then window 1 with three turns, then
// a manual compaction (RPC compact, as /compact). Pi's summarization
// request holds window 1's messages only; the request after the
// compaction starts with window 1's boundary (sent again by the
// extension), then Pi's summary, and holds nothing of window 0.
func TestPiExtensionRemoteCompactionKeepsCurrentWindow(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		codex := newFakeCodex(t)
		resp := newFakeResponses(t, [][]map[string]any{
			{nsCall("", "new_context", `{}`)}, // 0
			{textItem(1, "W1-REPLY-ONE")},     // 1
			{textItem(2, "W1-REPLY-TWO")},     // 2
			{textItem(3, "W1-REPLY-THREE")},   // 3
			{textItem(4, "W1-REPLY-FOUR")},    // 4
		})
		r := codexRig(t, v, resp.srv.URL)
		r.writeSettings(map[string]any{"transport": "sse", "compaction": map[string]any{"keepRecentTokens": 1}})
		r.startContextd("--codex-base-url", codex.srv.URL)
		p := r.startPi()
		p.prompt("WIN0-PROMPT: plan the work", 1)
		p.prompt("W1-PROMPT-TWO", 2)
		p.prompt("W1-PROMPT-THREE", 3)
		p.send(map[string]any{"type": "compact", "id": "compact"})
		p.waitFor("the compact response", 60*time.Second, func(evs []map[string]any) bool {
			for _, e := range evs {
				if e["type"] == "response" && e["id"] == "compact" {
					return true
				}
			}
			return false
		})
		p.prompt("W1-PROMPT-FOUR", 4)
		_, _, es := r.session()
		bs := boundaries(es)
		if len(bs) != 2 {
			t.Fatalf("boundaries = %d, want 2", len(bs))
		}
		w0, w1 := windowOf(t, bs[0]), windowOf(t, bs[1])
		window0 := []string{"WIN0-PROMPT", "Current context window id: " + w0.CurrentWindowID}
		resp.mu.Lock()
		summaries := append([]map[string]any(nil), resp.summaries...)
		resp.mu.Unlock()
		if len(summaries) == 0 {
			t.Fatalf("no summarization request; events %s", summarizeEvents(p.snapshot()))
		}
		all := ""
		for _, q := range summaries {
			s := mustJSON(q["input"])
			all += s
			for _, w := range window0 {
				if strings.Contains(s, w) {
					t.Errorf("a summarization request holds %q of window 0", w)
				}
			}
		}
		if !strings.Contains(all, "W1-REPLY-ONE") {
			t.Error("no summarization request holds window 1's first reply")
		}
		reqs := resp.requests()
		if len(reqs) != 5 {
			t.Fatalf("Responses requests = %d, want 5", len(reqs))
		}
		conv := conversationItems(reqs[4])
		if len(conv) < 3 {
			t.Fatalf("the request after the compaction: %s", mustJSON(conv))
		}
		if s := mustJSON(conv[0]); !strings.Contains(s, "Current context window id: "+w1.CurrentWindowID) {
			t.Errorf("the request after the compaction starts with %.300s, want window 1's boundary", s)
		}
		if s := mustJSON(conv[1]); !strings.Contains(s, "Summary ") {
			t.Errorf("the second item is %.300s, want Pi's compaction summary", s)
		}
		if s := mustJSON(conv[len(conv)-1]); !strings.Contains(s, "W1-PROMPT-FOUR") {
			t.Errorf("the last item is %.300s, want the new prompt", s)
		}
		in := mustJSON(reqs[4]["input"])
		for _, w := range window0 {
			if strings.Contains(in, w) {
				t.Errorf("the request after the compaction holds %q of window 0", w)
			}
		}
		want := "contextd: compacting context window 1 only; earlier windows stay readable with the history tool"
		if n := strings.Count(strings.Join(p.notices("info"), "\n"), want); n != 1 {
			t.Errorf("info notices %q: want %q once", p.notices("info"), want)
		}
		if n := p.notices("error"); len(n) != 0 {
			t.Errorf("UI errors: %q", n)
		}
	})
}
