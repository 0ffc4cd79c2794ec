package e2e

// Pi killed (kill -9) in a rollover before its window ends (docs/design.md
// §5.3 "Interrupted rollovers"): after new_context's tool call and before
// the rollover is settled (the message's other call still runs), and, in
// Tree mode, after it is settled while Pi writes the branch summary, and,
// in Local mode, after it is settled and before its commit (held there by
// CONTEXTD_E2E_HOLD_LOCAL_COMMIT, extension/src/e2e_hold.ts). The
// session file then holds no summary and no new boundary, so on restart
// (`pi --continue`) nothing is hidden: the model gets all of the window,
// the notes written before the crash are the notes, history finds its
// items, contextd reports no rollover in progress, and the person is told
// in one sentence. A Tree rollover still pending is settled by the resumed
// Pi (the model asked for it); any other is aborted at registration
// (coordinator/orphan.go) and the window goes on.

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

func TestPiExtensionKillPiBeforeSummary(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		for _, tc := range []struct{ mode, point string }{
			{"tree", "before-settle"}, {"tree", "after-settle"}, {"local", "before-settle"}, {"local", "after-settle"},
		} {
			t.Run(tc.mode+"-"+tc.point, func(t *testing.T) {
				before := []step{
					tool("notes", map[string]any{"action": "write_file", "path": "plan.md", "text": planText}), // 0
					tool("bash", map[string]any{"command": factCommand}),                                       // 1
				}
				if tc.point == "before-settle" {
					// The batch's bash call holds its turn open: the rollover
					// stays unsettled until it returns.
					before = append(before, step{Calls: []call{{Name: "new_context", Arguments: map[string]any{}}, {Name: "bash", Arguments: map[string]any{"command": "sleep 60"}}}})
				} else {
					before = append(before, tool("new_context", nil))
				}
				r := newRig(t, v, tc.mode, before)
				var hold summaryHold
				var commit commitHold
				switch {
				case tc.point == "after-settle" && tc.mode == "tree":
					hold = r.holdSummary()
				case tc.point == "after-settle":
					// Local commits right after the settle, with no model
					// call between: the extension's test hold stops there.
					commit = r.holdLocalCommit()
				}
				r.startContextd()
				p := r.startPi()
				p.send(map[string]any{"type": "prompt", "message": "find the fact, then roll over"})
				switch {
				case tc.point == "after-settle" && tc.mode == "tree":
					hold.waitStarted(t, p)
				case tc.point == "after-settle":
					commit.waitHeld(t, p)
					// Settled, not committed: contextd holds the rollover
					// and the file holds no boundary of it.
					var st struct {
						Rollover *struct {
							State string `json:"state"`
						} `json:"rollover"`
					}
					_, sid, _ := r.session()
					r.api("GET", "/v1/sessions/"+sid, nil, &st)
					if st.Rollover == nil || st.Rollover.State != "settled" {
						t.Fatalf("at the hold: rollover %+v, want state settled", st.Rollover)
					}
				default:
					p.waitFor("new_context's result", 60*time.Second, func(evs []map[string]any) bool {
						for _, e := range evs {
							if e["type"] == "tool_execution_end" && e["toolName"] == "new_context" {
								return true
							}
						}
						return false
					})
				}
				p.kill()
				_, sid, es := r.session()
				if bs := boundaries(es); len(bs) != 1 {
					t.Fatalf("boundaries after the kill = %d, want 1", len(bs))
				}
				for _, e := range es {
					if e.Type == "branch_summary" {
						t.Fatalf("a branch summary is in the file after the kill")
					}
				}
				n := len(r.requests())
				b, _ := json.Marshal([]step{tool("history", map[string]any{"action": "search_contents", "query": fact}), {Text: "done"}})
				if err := os.WriteFile(r.script, b, 0o600); err != nil {
					t.Fatal(err)
				}
				p = r.startPi("--continue")
				defer p.kill()
				p.prompt("what was the fact?", 1)
				reqs := r.requests()[n:]
				// Nothing is hidden: the model gets window 0's note write and
				// the bash output.
				first := turn(t, reqs, 0)
				if !anyContains(first, fact) || !anyContains(first, "plan.md") {
					t.Errorf("the first request after the restart lacks window 0's work: %+v", first.conversation())
				}
				search := lastToolResult(t, turn(t, reqs, 1))
				if search.IsError || !strings.Contains(search.text(), fact) {
					t.Errorf("history search_contents after the restart: %s", search.text())
				}
				var nf struct {
					File *struct {
						Content string `json:"content"`
					} `json:"file"`
				}
				r.api("POST", "/alpha/notes/v2/read_file", map[string]any{"path": "plan.md", "context": map[string]any{"session_id": sid}}, &nf)
				if nf.File == nil || nf.File.Content != planText {
					t.Errorf("notes read_file plan.md = %+v, want %q", nf.File, planText)
				}
				var st struct {
					Rollover   json.RawMessage `json:"rollover"`
					Incomplete json.RawMessage `json:"incomplete_rollover"`
				}
				r.api("GET", "/v1/sessions/"+sid, nil, &st)
				if string(st.Rollover) != "null" || string(st.Incomplete) != "null" {
					t.Errorf("after the restart: rollover %s incomplete %s; want null, null", st.Rollover, st.Incomplete)
				}
				// The person is told: a pending Tree rollover is settled by
				// the resumed Pi (the window the model asked to end is
				// archived with its summary); any other is aborted and the
				// window goes on.
				told := func(level, text string) int {
					n := 0
					for _, m := range p.notices(level) {
						if strings.Contains(m, text) {
							n++
						}
					}
					return n
				}
				if tc.mode == "tree" && tc.point == "before-settle" {
					if told("info", "context window 1 started; the previous one is archived with its summary") != 1 {
						t.Errorf("info notices %q, want the new window's", p.notices("info"))
					}
				} else if told("warning", "contextd: the new_context that was to end window 0 was cut short when Pi exited, so window 0 goes on with its notes and nothing was archived; /contextd new (or the model's next new_context) starts the next window") != 1 {
					t.Errorf("warnings %q, want one saying the rollover was cut short", p.notices("warning"))
				}
				if n := p.notices("error"); len(n) != 0 {
					t.Errorf("UI errors: %q", n)
				}
			})
		}
	})
}
