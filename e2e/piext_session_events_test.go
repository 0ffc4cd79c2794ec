package e2e

// Rows of docs/design.md §5.3.1 for what the person does while a Tree
// rollover's branch summary runs: /reload, Escape, /resume, /fork and /tree
// navigation, on Pi 0.85.1 and 1.6.0 in RPC mode with the faux model.

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// response waits for the RPC response with id and returns it.
func (p *piProc) response(id string) map[string]any {
	p.t.Helper()
	var out map[string]any
	p.waitFor("the "+id+" response", 60*time.Second, func(evs []map[string]any) bool {
		for _, e := range evs {
			if e["type"] == "response" && e["id"] == id {
				out = e
				return true
			}
		}
		return false
	})
	return out
}

// sessionFile asks Pi for its current session file (RPC get_state).
func (p *piProc) sessionFile(id string) string {
	p.t.Helper()
	p.send(map[string]any{"type": "get_state", "id": id})
	d, _ := p.response(id)["data"].(map[string]any)
	f, _ := d["sessionFile"].(string)
	return f
}

// rolloverLog is contextd's reset log of a session (GET …/rollovers).
type rolloverLog struct {
	Rollovers []struct {
		RolloverID string `json:"rollover_id"`
		State      string `json:"state"`
		Reason     string `json:"reason"`
	} `json:"rollovers"`
}

// summaryEventRig is a Tree rig whose first prompt rolls over (a note,
// then new_context) with the branch summary held; it returns once the
// summary started, with the rolling session's file and the id of its user
// message. spare replies follow.
func summaryEventRig(t *testing.T, v piVersion) (*rig, *piProc, summaryHold, string, string) {
	t.Helper()
	r := newRig(t, v, "tree", []step{
		tool("notes", map[string]any{"action": "write_file", "path": "plan.md", "text": "- WIN0-NOTE\n"}),
		tool("new_context", nil),
		{Text: "new window reply"}, {Text: "reply after the event"}, {Text: "spare"},
	})
	hold := r.holdSummary()
	r.startContextd()
	p := r.startPi()
	p.send(map[string]any{"type": "prompt", "message": "roll over"})
	hold.waitStarted(t, p)
	file := p.sessionFile("rolling")
	_, _, es := readSession(t, file)
	user := ""
	for _, e := range es {
		if e.Message != nil && e.Message.Role == "user" {
			user = e.ID
		}
	}
	return r, p, hold, file, user
}

// wantNotHappenedOnce fails unless the person was told once, as a
// warning in the new session's UI (the old session's UI is gone:
// extension/src/handoff.ts), never on stderr, that oldID's rollover did
// not happen because the session was replaced while it ran.
func wantNotHappenedOnce(t *testing.T, p *piProc, oldID string) {
	t.Helper()
	want := "contextd: new context did not happen: session " + oldID + " was replaced while its rollover ran; its branch is kept as it was"
	if n := strings.Count(strings.Join(p.notices("warning"), "\n"), want); n != 1 || strings.Contains(p.stderr.String(), want) {
		t.Errorf("warnings hold %q %d times, want once (and not on stderr); notices %q\nstderr:\n%s", want, n, p.notices(""), p.stderr.String())
	}
}

// noStale fails when a stale-context error reached the person (notices,
// stderr) or contextd's reset log of sessions.
func noStale(t *testing.T, r *rig, p *piProc, sessions ...string) {
	t.Helper()
	all := strings.Join(p.notices(""), "\n") + "\n" + p.stderr.String()
	for _, id := range sessions {
		var log rolloverLog
		r.api("GET", "/v1/sessions/"+id+"/rollovers", nil, &log)
		for _, ro := range log.Rollovers {
			all += "\n" + ro.Reason
		}
	}
	if strings.Contains(all, "stale") {
		t.Errorf("a stale-context error reached the person or the reset log:\n%s", all)
	}
}

// TestPiExtensionReloadDuringSummary (docs/design.md §5.3.1 row "/reload"):
// Tree, the person reloads the extensions (/reload; here the faux
// extension's /e2e-reload, as RPC mode has no reload) while the rollover's
// branch summary runs. Pi goes on with the summary; the rollover
// completes (0.85: the reloaded extension finishes it from the file; 1.6:
// the running one does), one new window, no stale-context error, the
// person told that the new window started (0.85: and, in the reloaded
// extension's UI, that the reload came during the summary), and the next
// prompt is answered in it.
func TestPiExtensionReloadDuringSummary(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		r, p, hold, file, _ := summaryEventRig(t, v)
		p.send(map[string]any{"type": "prompt", "message": "/e2e-reload", "id": "reload"})
		time.Sleep(500 * time.Millisecond)
		// Pi 1.6 answers the reload once the summary ended.
		hold.release(t)
		p.response("reload")
		p.waitFor("window 1", 20*time.Second, func([]map[string]any) bool {
			_, _, es := readSession(t, file)
			return len(boundaries(es)) >= 2
		})
		p.waitSettled(count(p.snapshot(), "agent_start"))
		p.prompt("after the reload", count(p.snapshot(), "agent_start")+1)
		id, _, es := readSession(t, file)
		bs := boundaries(es)
		if len(bs) != 2 {
			var types []string
			for _, e := range es {
				types = append(types, e.Type+":"+e.CustomType)
			}
			for _, q := range r.requests() {
				types = append(types, fmt.Sprintf("request %s %d: %s", q.Kind, q.Step, roles(q)))
			}
			t.Fatalf("boundaries = %d, want window 0 and window 1\n%s\nnotices %q\nstderr %s", len(bs), strings.Join(types, "\n"), p.notices(""), p.stderr.String())
		}
		w1 := windowOf(t, bs[1])
		var log rolloverLog
		r.api("GET", "/v1/sessions/"+id+"/rollovers", nil, &log)
		if n := len(log.Rollovers); n == 0 || log.Rollovers[n-1].State != "completed" {
			t.Errorf("reset log %+v, want the rollover completed", log.Rollovers)
		}
		for _, ro := range log.Rollovers {
			if ro.State == "failed" {
				t.Errorf("a rollover is recorded failed: %+v", ro)
			}
		}
		told := false
		for _, n := range p.notices("info") {
			told = told || strings.Contains(n, "context window 1 started") || strings.Contains(n, "a new context window started")
		}
		if !told {
			t.Errorf("the person is not told the new window started: %q\nstderr:\n%s", p.notices(""), p.stderr.String())
		}
		// 0.85: the old instance's navigation throws once the summary is
		// written; the reloaded instance shows the line (warning), never
		// stderr. 1.6 defers the reload until the rollover returned: no line.
		reloaded := "contextd: the extension was reloaded or the session replaced while a rollover's summary ran; the new context window opens from the session file once Pi has written the summary (run /contextd finish if it does not)"
		wantWarnings := 0
		if v.before086() {
			wantWarnings = 1
		}
		if n := strings.Count(strings.Join(p.notices("warning"), "\n"), reloaded); n != wantWarnings || strings.Contains(p.stderr.String(), reloaded) {
			t.Errorf("warnings hold the reload line %d times, want %d (and never on stderr); notices %q\nstderr:\n%s", n, wantWarnings, p.notices(""), p.stderr.String())
		}
		if all := strings.Join(p.notices(""), "\n"); strings.Contains(all, "the session you left") {
			t.Errorf("the person, still in the reloaded session, is told to resume it: %q", p.notices(""))
		}
		reqs := r.requests()
		last := reqs[len(reqs)-1]
		if conv := last.conversation(); len(conv) == 0 || !strings.Contains(conv[0].text(), "Current context window id: "+w1.CurrentWindowID) || !anyContains(last, "after the reload") {
			t.Errorf("the prompt after the reload is not answered in window 1: %s", roles(last))
		}
		noStale(t, r, p, id)
		checkClean(t, p, reqs)
	})
}

// TestPiExtensionAbortDuringSummary (docs/design.md §5.3.1 row "Escape
// (abort)"): Tree, the person presses Escape (RPC abort) while the
// rollover's branch summary runs. Pi aborts the summary; the rollover is
// aborted in contextd (navigation cancelled), the branch keeps window 0
// with nothing appended but a notice, the person is told in one line, and
// the model, whose new_context result said a window would start, is told
// in its window that it did not: the next request holds that notice.
func TestPiExtensionAbortDuringSummary(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		r, p, hold, file, _ := summaryEventRig(t, v)
		p.send(map[string]any{"type": "abort", "id": "abort"})
		time.Sleep(500 * time.Millisecond)
		// Pi answers the abort once the summary's request returned.
		hold.release(t)
		p.response("abort")
		p.waitSettled(count(p.snapshot(), "agent_start"))
		p.prompt("after the abort", count(p.snapshot(), "agent_start")+1)
		id, _, es := readSession(t, file)
		if n := len(boundaries(es)); n != 1 {
			t.Errorf("boundaries = %d, want window 0 only", n)
		}
		var log rolloverLog
		r.api("GET", "/v1/sessions/"+id+"/rollovers", nil, &log)
		if len(log.Rollovers) != 1 || log.Rollovers[0].State != "failed" || !strings.Contains(log.Rollovers[0].Reason, "navigation was cancelled") {
			t.Errorf("reset log %+v, want one rollover aborted, navigation cancelled", log.Rollovers)
		}
		want := "contextd: new context failed: navigation was cancelled; the old branch is kept"
		if got := p.notices("error"); len(got) != 1 || got[0] != want {
			t.Errorf("error notices %q, want [%q]", got, want)
		}
		told := "The new context window did not open (navigation was cancelled); you are still in the same context window."
		notices := 0
		for _, e := range es {
			if e.Type == "custom_message" && e.CustomType == "codex-context-notice" && strings.Contains(string(e.Content), told) {
				notices++
			}
		}
		if notices != 1 {
			t.Errorf("the session holds %d notices for the model, want 1", notices)
		}
		reqs := r.requests()
		last := reqs[len(reqs)-1]
		if !anyContains(last, told) || !anyContains(last, "after the abort") || !anyContains(last, "WIN0-NOTE") {
			t.Errorf("the request after the abort (window 0, the notice, the prompt): %s", roles(last))
		}
		noStale(t, r, p, id)
		checkPairing(t, reqs)
	})
}

// TestPiExtensionForkDuringSummary (docs/design.md §5.3.1 row "/new,
// /resume, /fork, /clone"): Tree, the person forks from the rolling
// session's prompt (RPC fork, as /fork) while the rollover's branch summary
// runs. Pi aborts the summary and replaces the session; the rollover is
// aborted in contextd (navigation cancelled), the old session gets no
// new boundary, no stale-context error, the person is told in one line.
func TestPiExtensionForkDuringSummary(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		r, p, hold, file, user := summaryEventRig(t, v)
		p.send(map[string]any{"type": "fork", "entryId": user, "id": "fork"})
		hold.release(t)
		if ok, _ := p.response("fork")["success"].(bool); !ok {
			t.Fatalf("fork refused: %v", p.response("fork"))
		}
		time.Sleep(time.Second)
		oldID, _, es := readSession(t, file)
		if n := len(boundaries(es)); n != 1 {
			t.Errorf("the old session holds %d boundaries, want window 0 only", n)
		}
		var log rolloverLog
		r.api("GET", "/v1/sessions/"+oldID+"/rollovers", nil, &log)
		if len(log.Rollovers) != 1 || log.Rollovers[0].State != "failed" || !strings.Contains(log.Rollovers[0].Reason, "cancelled") {
			t.Errorf("old session's reset log = %+v, want one rollover aborted, navigation cancelled", log.Rollovers)
		}
		wantNotHappenedOnce(t, p, oldID)
		if now := p.sessionFile("after"); now == file {
			t.Errorf("Pi is still on the old session %s", file)
		}
		noStale(t, r, p, oldID)
		checkClean(t, p, r.requests())
	})
}

// TestPiExtensionTreeDuringSummary (docs/design.md §5.3.1 row "/tree
// navigation by the person"): Tree, the person navigates the session tree
// (the faux extension's /e2e-navigate, as a /tree selection) while the
// rollover's branch summary runs. Pi 0.85 would run both navigations and
// leave the branch in a summary no rollover can commit; Pi 1.6 runs the
// navigation after the summary, before the boundary, which would then
// open window 1 on window 0's branch. The extension refuses the person's
// navigation with one sentence on both, the rollover completes, and the
// new window's run follows.
func TestPiExtensionTreeDuringSummary(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		r, p, hold, file, user := summaryEventRig(t, v)
		p.send(map[string]any{"type": "prompt", "message": "/e2e-navigate " + user, "id": "tree"})
		time.Sleep(500 * time.Millisecond)
		hold.release(t)
		p.response("tree")
		p.waitFor("window 1", 60*time.Second, func([]map[string]any) bool {
			_, _, es := readSession(t, file)
			return len(boundaries(es)) == 2
		})
		p.waitSettled(count(p.snapshot(), "agent_start"))
		id, _, es := readSession(t, file)
		bs := boundaries(es)
		if len(bs) != 2 {
			t.Fatalf("boundaries = %d, want 2", len(bs))
		}
		var log rolloverLog
		r.api("GET", "/v1/sessions/"+id+"/rollovers", nil, &log)
		if len(log.Rollovers) != 1 || log.Rollovers[0].State != "completed" {
			t.Errorf("reset log %+v, want one completed rollover", log.Rollovers)
		}
		want := "contextd: wait for the new context window to start before navigating the session tree (its summary is running)"
		if got := p.notices("warning"); len(got) != 1 || got[0] != want {
			t.Errorf("warnings %q, want [%q]", got, want)
		}
		reqs := r.requests()
		last := reqs[len(reqs)-1]
		if conv := last.conversation(); len(conv) == 0 || !strings.Contains(conv[0].text(), "Current context window id: "+windowOf(t, bs[1]).CurrentWindowID) {
			var texts []string
			for _, m := range last.conversation() {
				texts = append(texts, fmt.Sprintf("%s: %.120q", m.Role, m.text()))
			}
			t.Errorf("the last request does not start at window 1's boundary:\n%s\nnotices %q", strings.Join(texts, "\n"), p.notices(""))
		}
		noStale(t, r, p, id)
		checkClean(t, p, reqs)
	})
}

// TestPiExtensionResumeDuringSummary (docs/design.md §5.3.1 row "/new,
// /resume, /fork, /clone"): Tree, the person resumes another session (RPC
// switch_session, as /resume) while the rollover's branch summary runs.
// Pi aborts the summary and replaces the session; the rollover is aborted
// in contextd (navigation cancelled), the rolling session gets no new
// boundary, the resumed one is unchanged, no stale-context error, and the
// person is told in one line.
func TestPiExtensionResumeDuringSummary(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		r := newRig(t, v, "tree", []step{
			{Text: "other session reply"},
			tool("notes", map[string]any{"action": "write_file", "path": "plan.md", "text": "- WIN0-NOTE\n"}),
			tool("new_context", nil),
			{Text: "spare"},
		})
		hold := r.holdSummary()
		r.startContextd()
		p := r.startPi()
		p.prompt("the other session", 1)
		other := p.sessionFile("other")
		_, _, before := readSession(t, other)
		p.send(map[string]any{"type": "new_session", "id": "new"})
		p.response("new")
		p.send(map[string]any{"type": "prompt", "message": "roll over"})
		hold.waitStarted(t, p)
		rolling := p.sessionFile("rolling")
		p.send(map[string]any{"type": "switch_session", "sessionPath": other, "id": "resume"})
		time.Sleep(500 * time.Millisecond)
		hold.release(t)
		if ok, _ := p.response("resume")["success"].(bool); !ok {
			t.Fatalf("switch_session refused: %v", p.response("resume"))
		}
		time.Sleep(time.Second)
		if now := p.sessionFile("after"); now != other {
			t.Errorf("Pi is on %s, want the resumed %s", now, other)
		}
		oldID, _, es := readSession(t, rolling)
		if n := len(boundaries(es)); n != 1 {
			t.Errorf("the rolling session holds %d boundaries, want window 0 only", n)
		}
		var log rolloverLog
		r.api("GET", "/v1/sessions/"+oldID+"/rollovers", nil, &log)
		if len(log.Rollovers) != 1 || log.Rollovers[0].State != "failed" || !strings.Contains(log.Rollovers[0].Reason, "cancelled") {
			t.Errorf("the rolling session's reset log = %+v, want one rollover aborted, navigation cancelled", log.Rollovers)
		}
		otherID, _, after := readSession(t, other)
		if len(after) != len(before) {
			t.Errorf("the resumed session has %d entries, want its %d", len(after), len(before))
		}
		wantNotHappenedOnce(t, p, oldID)
		noStale(t, r, p, oldID, otherID)
		checkClean(t, p, r.requests())
	})
}

// TestPiExtensionNewSessionAfterRefusedTreeDuringSummary: Tree, while the
// rollover's branch summary runs the person's /tree is refused, then they
// start a new session (RPC new_session, as /new). Pi does not abort the
// summary on this path: the old file gets the branch summary but not the
// manifest. The person is told that in the new session's UI, once (a
// warning; extension/src/handoff.ts replacedDuringSummaryNotice), never
// the wrong "its branch is kept as it was" on stderr; and their next message
// reaches the provider exactly as typed (no boundary text in front).
func TestPiExtensionNewSessionAfterRefusedTreeDuringSummary(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		r, p, hold, file, user := summaryEventRig(t, v)
		p.send(map[string]any{"type": "prompt", "message": "/e2e-navigate " + user, "id": "tree"})
		time.Sleep(500 * time.Millisecond)
		p.send(map[string]any{"type": "new_session", "id": "new"})
		time.Sleep(500 * time.Millisecond)
		hold.release(t)
		p.response("new")
		time.Sleep(2 * time.Second)
		want := "contextd: the session you left (" + file + ") got its branch summary but its new context window did not open yet; /resume it and the window opens (or run /contextd finish there)"
		var got []string
		for _, n := range p.notices("") {
			if strings.Contains(n, "session you left") || strings.Contains(n, "did not happen") {
				got = append(got, n)
			}
		}
		id, _, es := readSession(t, file)
		summaries := 0
		for _, e := range es {
			if e.Type == "branch_summary" {
				summaries++
			}
		}
		// Pi 1.6 defers the /tree typed during the summary (nothing is
		// refused before new_session) and aborts the summary: the old
		// branch is kept, which is what contextd then says.
		if summaries == 0 {
			want = "contextd: new context did not happen: session " + id + " was replaced while its rollover ran; its branch is kept as it was"
			got = nil
			if strings.Count(strings.Join(p.notices("warning"), "\n"), want) == 1 {
				got = []string{want}
			}
		}
		if len(got) != 1 || got[0] != want {
			t.Errorf("notices about the old session %q, want [%q]", got, want)
		}
		if summaries == 1 && strings.Contains(p.stderr.String(), "its branch is kept as it was") {
			t.Errorf("stderr says the branch was kept:\n%s", p.stderr.String())
		}
		before := len(r.requests())
		settled := count(p.snapshot(), "agent_settled")
		p.send(map[string]any{"type": "prompt", "message": "hello"})
		// The old session's run started and never settles in this process's
		// events (waitSettled would wait for it): wait for hello's only.
		p.waitFor("hello's run", 60*time.Second, func(evs []map[string]any) bool { return count(evs, "agent_settled") > settled })
		reqs := r.requests()
		if len(reqs) <= before {
			t.Fatalf("no provider request after hello")
		}
		conv := reqs[len(reqs)-1].conversation()
		var last pmsg
		for _, m := range conv {
			if m.Role == "user" {
				last = m
			}
		}
		if last.text() != "hello" {
			t.Errorf("the new session's user message = %q, want %q", last.text(), "hello")
		}
		for _, e := range p.snapshot() {
			// The e2e helper's own command may use its stale ctx; contextd's handlers must not.
			if path, _ := e["extensionPath"].(string); e["type"] == "extension_error" && strings.Contains(path, "contextd") {
				t.Errorf("contextd's handler failed: %v", e)
			}
		}
		t.Logf("old file branch summaries: %d; notices %q", summaries, p.notices(""))
	})
}
