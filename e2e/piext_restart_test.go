package e2e

// Rollovers interrupted by a contextd restart (docs/design.md §5.3
// "Interrupted rollovers", docs/reliability.md): contextd is killed
// (kill -9) in the middle of a rollover and started again while the same
// Pi goes on. Whatever the person or the model does next, the session is
// never left with a rollover that blocks every later new_context: a Tree
// rollover whose summary Pi wrote is finished by /contextd finish even when
// the person typed a message meanwhile, one whose summary the person left
// with /tree is superseded by the model's next new_context there, and a
// Local rollover that was
// settled but never committed (it wrote nothing to the file) is aborted,
// so the model's next new_context works without /reload. Neither the
// model nor the person is ever shown an HTTP route.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// noHTTPAdvice fails when a text shown to the model or the person names an
// HTTP route or curl.
func noHTTPAdvice(t *testing.T, where, text string) {
	t.Helper()
	for _, bad := range []string{"POST ", "/v1/", "curl"} {
		if strings.Contains(text, bad) {
			t.Errorf("%s shows %q: %s", where, bad, text)
		}
	}
}

// plainAndPaired fails when a provider request or a notice names an HTTP
// route or curl (noHTTPAdvice), or a request breaks a tool-call pair
// (checkPairing).
func plainAndPaired(t *testing.T, reqs []request, notices []string) {
	t.Helper()
	for _, q := range reqs {
		for _, m := range q.conversation() {
			noHTTPAdvice(t, "a provider request", string(m.Content))
		}
	}
	for _, m := range notices {
		noHTTPAdvice(t, "a notice", m)
	}
	checkPairing(t, reqs)
}

// wantFinished fails unless GET /v1/sessions/{sid} shows no open and no
// incomplete rollover and one archive: a Tree rollover finished.
func (r *rig) wantFinished(sid string) {
	r.t.Helper()
	var st struct {
		Rollover   json.RawMessage `json:"rollover"`
		Incomplete json.RawMessage `json:"incomplete_rollover"`
		Archives   int             `json:"archives"`
	}
	r.api("GET", "/v1/sessions/"+sid, nil, &st)
	if string(st.Rollover) != "null" || string(st.Incomplete) != "null" || st.Archives != 1 {
		r.t.Errorf("after finishing: rollover %s incomplete %s archives %d; want null, null, 1", st.Rollover, st.Incomplete, st.Archives)
	}
}

// rolloverStates is GET …/rollovers: each rollover's id and state.
func (r *rig) rolloverStates(sid string) []struct{ RolloverID, State string } {
	r.t.Helper()
	var log struct {
		Rollovers []struct {
			RolloverID string `json:"rollover_id"`
			State      string `json:"state"`
		} `json:"rollovers"`
	}
	r.api("GET", "/v1/sessions/"+sid+"/rollovers", nil, &log)
	var out []struct{ RolloverID, State string }
	for _, x := range log.Rollovers {
		out = append(out, struct{ RolloverID, State string }{x.RolloverID, x.State})
	}
	return out
}

// TestPiExtensionTreeFinishAfterTypedInput: Tree mode, contextd killed while
// Pi writes the rollover's branch summary, the person types a message
// before the summary is done, contextd restarted, /contextd finish. The
// typed message moved the leaf past the summary, so the planned entries go
// after it; finish completes the rollover all the same: GET shows no
// rollover, the reset log lists it once, completed, and the model's next
// new_context opens window 2.
func TestPiExtensionTreeFinishAfterTypedInput(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		r := newRig(t, v, "tree", []step{
			tool("new_context", nil),           // 0
			{Text: "answered the typed input"}, // 1
			tool("new_context", nil),           // 2
			{Text: "window 2"},                 // 3
		})
		hold := r.holdSummary()
		r.startContextd()
		p := r.startPi()
		p.send(map[string]any{"type": "prompt", "message": "roll over"})
		hold.waitStarted(t, p)
		r.stopContextd(true)
		p.send(map[string]any{"type": "prompt", "message": "typed during", "streamingBehavior": "followUp"})
		time.Sleep(300 * time.Millisecond)
		hold.release(t)
		p.waitFor("the typed input's answer", 60*time.Second, func([]map[string]any) bool {
			for _, q := range r.requests() {
				if q.Kind == "turn" && q.Step == 1 {
					return true
				}
			}
			return false
		})
		p.waitSettled(count(p.snapshot(), "agent_start"))
		errorsBefore := len(p.notices("error"))
		r.startContextd()
		p.command(map[string]any{"type": "prompt", "message": "/contextd finish"})
		report := func() string { return p.notice("contextd: finished the interrupted rollover ") }
		p.waitFor("the finish report", 30*time.Second, func([]map[string]any) bool { return report() != "" || len(p.notices("error")) > errorsBefore })
		if got := report(); !strings.HasSuffix(got, ": appended the archive marker, the notes snapshot and the new window's boundary") {
			t.Fatalf("/contextd finish said %q; notices: %q", got, p.notices(""))
		}
		_, sid, es := r.session()
		if bs := boundaries(es); len(bs) != 2 {
			t.Fatalf("boundaries after finishing = %d, want 2", len(bs))
		}
		r.wantFinished(sid)
		if log := r.rolloverStates(sid); len(log) != 1 || log[0].State != "completed" {
			t.Errorf("reset log after finishing: %+v, want one completed rollover", log)
		}
		// The model's next new_context works.
		n := len(r.requests())
		p.prompt("roll over again", count(p.snapshot(), "agent_settled")+1)
		reqs := r.requests()
		if len(reqs) == n {
			t.Fatalf("no provider request after the second new_context")
		}
		// Window 1 (the request that calls new_context again) keeps what
		// the person typed while the rollover was interrupted, and the
		// answer: the finish's entries went after them, nothing is hidden;
		// the Tree summary is hidden once the manifest is in.
		if q := turn(t, reqs, 2); !anyContains(q, "typed during") || !anyContains(q, "answered the typed input") || anyContains(q, "the archived window's work") {
			t.Errorf("window 1's first request lacks the typed exchange or holds the summary: %+v", q.conversation())
		}
		// Every new_context result in the file is the tool's own text.
		_, _, es = r.session()
		for _, e := range es {
			if e.Message != nil && e.Message.Role == "toolResult" && strings.Contains(e.Message.text(), "contextd") {
				t.Errorf("a tool result names contextd: %s", e.Message.text())
			}
		}
		if bs := boundaries(es); len(bs) != 3 || windowOf(t, bs[2]).WindowNumber != 2 {
			t.Errorf("boundaries after the second new_context = %d, want 3 (window 2)", len(bs))
		}
		if log := r.rolloverStates(sid); len(log) != 2 {
			t.Errorf("reset log at the end: %+v, want two rollovers", log)
		}
		plainAndPaired(t, reqs, p.notices(""))
	})
}

// TestPiExtensionLocalCommitCutByRestart: Local mode, contextd killed
// between the rollover's settle and its commit (held there by
// CONTEXTD_E2E_HOLD_LOCAL_COMMIT), the hold released (the commit fails,
// the model is told it stays in its window), contextd restarted. The
// rollover wrote nothing to the file. Row next-new-context: the model's
// next new_context aborts it (superseded) and opens window 1. Row finish:
// /contextd first says the rollover is interrupted and that /contextd
// finish drops it; /contextd finish drops it in one sentence; the model's
// next new_context opens window 1. Either way no /reload, no HTTP route
// shown to the model or the person, and the reset log lists the dropped
// rollover once (aborted) and the new one once (completed).
func TestPiExtensionLocalCommitCutByRestart(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		for _, row := range []string{"next-new-context", "finish"} {
			t.Run(row, func(t *testing.T) {
				r := newRig(t, v, "local", []step{
					tool("new_context", nil),      // 0
					{Text: "staying in window 0"}, // 1: answers the "did not open" message
					tool("new_context", nil),      // 2
					{Text: "window 1"},            // 3
				})
				commit := r.holdLocalCommit()
				r.startContextd()
				p := r.startPi()
				p.send(map[string]any{"type": "prompt", "message": "roll over"})
				commit.waitHeld(t, p)
				r.stopContextd(true)
				if err := os.WriteFile(filepath.Join(commit.dir, "commit-continue"), nil, 0o600); err != nil {
					t.Fatal(err)
				}
				p.waitSettled(1)
				r.startContextd()
				_, sid, es := r.session()
				if bs := boundaries(es); len(bs) != 1 {
					t.Fatalf("boundaries after the cut commit = %d, want 1", len(bs))
				}
				if row == "finish" {
					p.command(map[string]any{"type": "prompt", "message": "/contextd"})
					p.waitFor("the status report", 30*time.Second, func([]map[string]any) bool { return p.notice("contextd mode: local") != "" })
					if st := p.notice("contextd mode: local"); !strings.Contains(st, ": settled (interrupted, nothing of it is in the session file: /contextd finish drops it)") {
						t.Errorf("/contextd said:\n%s", st)
					}
					p.command(map[string]any{"type": "prompt", "message": "/contextd finish"})
					const dropped = "had put nothing in the session file, so it is dropped and window 0 goes on; the model's next new_context (or /contextd new) starts the next window"
					p.waitFor("the finish report", 30*time.Second, func([]map[string]any) bool {
						for _, n := range p.notices("info") {
							if strings.Contains(n, dropped) {
								return true
							}
						}
						return false
					})
				}
				n := len(r.requests())
				p.prompt("roll over again", count(p.snapshot(), "agent_settled")+1)
				reqs := r.requests()
				if len(reqs) == n {
					t.Fatal("no provider request after the second prompt")
				}
				_, _, es = r.session()
				// The new window starts at its boundary, so the second
				// new_context's result is in the file, not in step 3's request.
				var res *pmsg
				for _, e := range es {
					if e.Message != nil && e.Message.Role == "toolResult" {
						res = e.Message
					}
				}
				if res == nil || res.IsError || !strings.HasPrefix(res.text(), "A new context window will start without summarizing conversation history.") {
					got := "none"
					if res != nil {
						got = res.text()
					}
					t.Errorf("the second new_context's result is not the tool's own: %q", got)
				}
				turn(t, reqs[n:], 3)
				if bs := boundaries(es); len(bs) != 2 || windowOf(t, bs[1]).WindowNumber != 1 {
					t.Errorf("boundaries after the second new_context = %d, want 2 (window 1)", len(bs))
				}
				var st struct {
					Rollover json.RawMessage `json:"rollover"`
				}
				r.api("GET", "/v1/sessions/"+sid, nil, &st)
				if string(st.Rollover) != "null" {
					t.Errorf("after the second new_context: rollover %s, want null", st.Rollover)
				}
				log := r.rolloverStates(sid)
				if len(log) != 2 || log[0].State != "failed" || log[1].State != "completed" {
					t.Errorf("reset log %+v, want the dropped rollover (failed) and the new one (completed)", log)
				}
				plainAndPaired(t, reqs, p.notices(""))
			})
		}
	})
}

// TestPiExtensionTreeSupersededOffItsBranch: Tree mode, contextd killed
// while Pi writes the rollover's branch summary, so the summary lands and
// the rollover stays open in contextd's state; the person then moves the
// leaf back to the new_context result with /tree (the faux extension's
// /e2e-navigate, as a /tree pick without summary), off the summary's
// branch, and contextd is started again. The model's next new_context is
// not refused: the old rollover is superseded (aborted, its summary still
// in the file and on /tree), and the new one opens window 1 on the
// person's branch.
func TestPiExtensionTreeSupersededOffItsBranch(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		r := newRig(t, v, "tree", []step{
			tool("new_context", nil), // 0
			tool("new_context", nil), // 1: after the /tree
			{Text: "window 1"},       // 2
		})
		hold := r.holdSummary()
		r.startContextd()
		p := r.startPi()
		p.send(map[string]any{"type": "prompt", "message": "roll over"})
		hold.waitStarted(t, p)
		r.stopContextd(true)
		hold.release(t)
		p.waitSettled(1)
		_, sid, es := r.session()
		var summary entry
		for _, e := range es {
			if e.Type == "branch_summary" {
				summary = e
			}
		}
		if summary.ID == "" || summary.FromID == "" {
			t.Fatalf("no branch summary in the file after the summary ran")
		}
		if resp := p.command(map[string]any{"type": "prompt", "message": "/e2e-navigate " + summary.FromID}); resp["success"] != true {
			t.Fatalf("/e2e-navigate: %v", resp)
		}
		r.startContextd()
		n := len(r.requests())
		p.prompt("roll over again", 3) // its settle, then window 1's run
		reqs := r.requests()
		if len(reqs) == n {
			t.Fatalf("no provider request after the navigation")
		}
		for _, m := range p.notices("") {
			if strings.Contains(m, "/contextd finish") || strings.Contains(m, "still being") {
				t.Errorf("the person was told the rollover is pending: %q", m)
			}
		}
		_, _, es = r.session()
		// The leaf's branch: the second rollover's summary, its manifest,
		// snapshot and the boundary of window 1 (a Tree branch holds the
		// current window's boundary only), then the model's reply.
		bs := boundaries(chain(es, es[len(es)-1].ID))
		if len(bs) != 1 || windowOf(t, bs[0]).WindowNumber != 1 {
			t.Fatalf("boundaries on the leaf's branch = %d, want window 1's", len(bs))
		}
		if byID(es)[summary.ID].ID == "" {
			t.Errorf("the first summary %s is no longer in the file", summary.ID)
		}
		// The reset log shows the first rollover as failed (aborted after
		// its settle), superseded; the second completed.
		var log rolloverLog
		r.api("GET", "/v1/sessions/"+sid+"/rollovers", nil, &log)
		if len(log.Rollovers) != 2 || log.Rollovers[0].State != "failed" || !strings.HasPrefix(log.Rollovers[0].Reason, "superseded: new_context was called on a branch without this rollover's branch summary") ||
			log.Rollovers[1].State != "completed" {
			t.Errorf("reset log %+v, want the first rollover superseded off its branch and the second completed", log.Rollovers)
		}
		// The new window's request: the boundary of window 1, not the
		// first rollover's summary.
		if q := turn(t, reqs, 2); !anyContains(q, "Current context window id: "+windowOf(t, bs[0]).CurrentWindowID) {
			t.Errorf("window 1's request lacks its boundary: %s", roles(q))
		}
		plainAndPaired(t, reqs, p.notices(""))
	})
}
