package e2e

// Rollovers interrupted by a contextd restart (docs/design.md §5.3
// "Interrupted rollovers", docs/reliability.md): contextd is killed
// (kill -9) in the middle of a rollover and started again while the same
// Pi goes on. Whatever the person or the model does next, the session is
// never left with a rollover that blocks every later new_context: a Tree
// rollover whose summary Pi wrote is finished by /contextd finish even when
// the person typed a message meanwhile, and a Local rollover that was
// settled but never committed (it wrote nothing to the file) is aborted,
// so the model's next new_context works without /reload. Neither the
// model nor the person is ever shown an HTTP route.

import (
	"encoding/json"
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
		if got := report(); !strings.HasSuffix(got, ": appended codex-context-tree-archive, codex-context-note-snapshot, codex-context-window") {
			t.Fatalf("/contextd finish said %q; notices: %q", got, p.notices(""))
		}
		_, sid, es := r.session()
		if bs := boundaries(es); len(bs) != 2 {
			t.Fatalf("boundaries after finishing = %d, want 2", len(bs))
		}
		var st struct {
			Rollover   json.RawMessage `json:"rollover"`
			Incomplete json.RawMessage `json:"incomplete_rollover"`
			Archives   int             `json:"archives"`
		}
		r.api("GET", "/v1/sessions/"+sid, nil, &st)
		if string(st.Rollover) != "null" || string(st.Incomplete) != "null" || st.Archives != 1 {
			t.Errorf("after finishing: rollover %s incomplete %s archives %d; want null, null, 1", st.Rollover, st.Incomplete, st.Archives)
		}
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
		for _, q := range reqs {
			for _, m := range q.conversation() {
				noHTTPAdvice(t, "a provider request", string(m.Content))
			}
		}
		for _, m := range p.notices("") {
			noHTTPAdvice(t, "a notice", m)
		}
		checkPairing(t, reqs)
	})
}
