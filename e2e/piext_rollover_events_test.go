package e2e

// Rows of docs/design.md §5.3.1 (what Pi delivers while a rollover runs), each
// on Pi 0.85.1 and 1.6.0 in RPC mode with the faux model: every provider
// request, the session file and what the person is shown.

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// newWindowRequests returns the agent requests whose conversation starts
// at the boundary of window w, and the others.
func newWindowRequests(reqs []request, w windowIdentity) (in, out []request) {
	for _, q := range reqs {
		if q.Kind != "turn" {
			continue
		}
		conv := q.conversation()
		if len(conv) > 0 && strings.Contains(conv[0].text(), "Current context window id: "+w.CurrentWindowID) {
			in = append(in, q)
		} else {
			out = append(out, q)
		}
	}
	return in, out
}

// roles lists a request's conversation roles, for failure messages.
func roles(q request) string {
	var out []string
	for _, m := range q.conversation() {
		out = append(out, m.Role)
	}
	return strings.Join(out, " ")
}

// userEntries returns the session's user messages that hold s, in file order.
func userEntries(es []entry, s string) []entry {
	var out []entry
	for _, e := range es {
		if e.Message != nil && e.Message.Role == "user" && strings.Contains(e.Message.text(), s) {
			out = append(out, e)
		}
	}
	return out
}

// eventRig starts contextd and Pi (RPC, faux model scripted with steps)
// in mode, with env added to Pi's environment: the setup every row's test
// shares.
func eventRig(t *testing.T, v piVersion, mode string, steps []step, env ...string) (*rig, *piProc) {
	t.Helper()
	r := newRig(t, v, mode, steps)
	r.env = append(r.env, env...)
	r.startContextd()
	return r, r.startPi()
}

// settledWindows waits until every run Pi started has settled, then reads
// the session file and requires want window boundaries on it.
func settledWindows(t *testing.T, r *rig, p *piProc, want int) (es, bs []entry) {
	t.Helper()
	p.waitSettled(count(p.snapshot(), "agent_start"))
	_, _, es = r.session()
	bs = boundaries(es)
	if len(bs) != want {
		t.Fatalf("boundaries = %d, want %d; events %s", len(bs), want, summarizeEvents(p.snapshot()))
	}
	return es, bs
}

// TestPiExtensionInputDuringNewContext (case-12; docs/design.md §5.3.1 rows "Steer typed
// while the model streams or the batch runs" and "Follow-up typed"): the
// person types while new_context runs (the faux provider queues the input
// at new_context's tool_call, as the TUI's Enter does while the agent
// streams). In Local (steering one-at-a-time and "all") and Tree, the
// input reaches the model in the new window and in no request of the
// closing window; the session file holds it after the new boundary on
// one branch; the person is told once that it was held.
func TestPiExtensionInputDuringNewContext(t *testing.T) {
	const typed = "STEER-7731: also rename the flag to --fast"
	for _, c := range []struct {
		name, mode, steering, deliverAs string
	}{
		{"local-steer", "local", "", "steer"},
		{"local-steer-all", "local", "all", "steer"},
		{"local-followup", "local", "", "followUp"},
		{"tree-steer", "tree", "", "steer"},
		{"tree-followup", "tree", "", "followUp"},
	} {
		t.Run(c.name, func(t *testing.T) {
			eachPi(t, func(t *testing.T, v piVersion) {
				r, p := eventRig(t, v, c.mode, []step{
					tool("notes", map[string]any{"action": "write_file", "path": "plan.md", "text": "- task: add the flag\n"}),
					tool("new_context", nil),
					{Text: "reply A"}, {Text: "reply B"}, {Text: "reply C"},
				}, "CONTEXTD_E2E_INPUT_ON_TOOL=new_context:"+c.deliverAs+":"+typed)
				if c.steering != "" {
					p.send(map[string]any{"type": "set_steering_mode", "mode": c.steering, "id": "steering"})
				}
				p.send(map[string]any{"type": "prompt", "message": "add the flag"})
				p.waitFor("the typed input's answer", 60*time.Second, func([]map[string]any) bool {
					// The faux provider may be writing a line: read only
					// what is complete.
					b, _ := os.ReadFile(r.logPath)
					for _, line := range strings.Split(string(b), "\n") {
						var q request
						if json.Unmarshal([]byte(line), &q) == nil && q.Kind == "turn" && anyContains(q, "STEER-7731") {
							return true
						}
					}
					return false
				})
				es, bs := settledWindows(t, r, p, 2)
				w1 := windowOf(t, bs[1])
				if w1.WindowNumber != 1 || w1.PreviousWindowID != windowOf(t, bs[0]).CurrentWindowID {
					t.Errorf("window 1 = %+v", w1)
				}
				in, closing := newWindowRequests(r.requests(), w1)
				for _, q := range closing {
					if anyContains(q, "STEER-7731") {
						t.Errorf("request %d (closing window: %s) holds the typed input", q.Step, roles(q))
					}
				}
				seen := false
				for _, q := range in {
					seen = seen || anyContains(q, "STEER-7731")
				}
				if !seen {
					t.Errorf("no request of the new window holds the typed input; new-window requests: %d", len(in))
				}
				// The closing window: the prompt, then the notes call and
				// the new_context call (two requests); nothing after them.
				if len(closing) != 2 {
					t.Errorf("closing-window requests = %d, want 2 (prompt, after notes)", len(closing))
				}
				us := userEntries(es, "STEER-7731")
				if len(us) != 1 {
					t.Fatalf("the typed input is %d times in the session file, want once", len(us))
				}
				onBranch := false
				for _, e := range chain(es, us[0].ID) {
					onBranch = onBranch || e.ID == bs[1].ID
				}
				if !onBranch {
					t.Errorf("the typed input %s is not after the new boundary %s", us[0].ID, bs[1].ID)
				}
				held := 0
				for _, n := range p.notices("info") {
					if strings.Contains(n, "your message is held") {
						held++
					}
				}
				if held != 1 {
					t.Errorf("held notices = %d, want 1: %q", held, p.notices(""))
				}
				checkClean(t, p, r.requests())
			})
		})
	}
}

// TestPiExtensionSeveralNewContextCalls (case-19; docs/design.md §5.3.1 row "Several
// new_context calls in one message"): Local, one message calls
// new_context twice: one rollover, one new window (number 1, previous =
// window 0), both tool results answered, and the model's reply in the new
// window is not cut by a second boundary.
func TestPiExtensionSeveralNewContextCalls(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		r, p := eventRig(t, v, "local", []step{
			tool("notes", map[string]any{"action": "write_file", "path": "plan.md", "text": "- task\n"}),
			{Calls: []call{{Name: "new_context", Arguments: map[string]any{}}, {Name: "new_context", Arguments: map[string]any{}}}},
			{Text: "new window"}, {Text: "more"},
		})
		p.prompt("go", 1)
		p.prompt("next", 2)
		// Window 0 and one new window.
		es, bs := settledWindows(t, r, p, 2)
		_, sid, _ := r.session()
		w0, w1 := windowOf(t, bs[0]), windowOf(t, bs[1])
		if w1.WindowNumber != 1 || w1.PreviousWindowID != w0.CurrentWindowID {
			t.Errorf("window 1 = %+v", w1)
		}
		reqs := r.requests()
		if len(reqs) != 4 {
			t.Fatalf("requests = %d, want 4", len(reqs))
		}
		// Step 2 starts at the new boundary alone; step 3 keeps the reply.
		if conv := turn(t, reqs, 2).conversation(); len(conv) != 1 || !strings.Contains(conv[0].text(), w1.CurrentWindowID) {
			t.Errorf("step 2: %s", roles(turn(t, reqs, 2)))
		}
		if conv := turn(t, reqs, 3).conversation(); len(conv) != 3 || conv[1].text() != "new window" || conv[2].text() != "next" {
			t.Errorf("step 3: %s", roles(turn(t, reqs, 3)))
		}
		var lw struct {
			Windows []struct {
				WindowID string `json:"window_id"`
			} `json:"windows"`
		}
		r.api("POST", "/alpha/history/v2/list_windows", map[string]any{"context": map[string]any{"session_id": sid}}, &lw)
		if len(lw.Windows) != 2 {
			t.Errorf("list_windows: %+v, want 2 windows", lw.Windows)
		}
		results := 0
		for _, e := range es {
			if e.Message != nil && e.Message.Role == "toolResult" && strings.Contains(e.Message.text(), "A new context window will start") {
				results++
			}
		}
		if results != 2 {
			t.Errorf("new_context results = %d, want 2 (one per call)", results)
		}
		checkClean(t, p, r.requests())
	})
}

// TestPiExtensionNewContextBesideOtherCalls (docs/design.md §5.3.1 row "new_context
// beside other tool calls"): one message calls notes write_file and
// new_context. Local: the rollover follows the whole batch, so the note
// entry and both results are in the closing window; the new boundary, the
// first message of the new window, names the notes call's result item.
// Tree: the same boundary text after the summary.
func TestPiExtensionNewContextBesideOtherCalls(t *testing.T) {
	for _, mode := range []string{"local", "tree"} {
		t.Run(mode, func(t *testing.T) {
			eachPi(t, func(t *testing.T, v piVersion) {
				steps := []step{{Calls: []call{
					{Name: "notes", Arguments: map[string]any{"action": "write_file", "path": "plan.md", "text": "- task\n"}},
					{Name: "new_context", Arguments: map[string]any{}},
				}}}
				if mode == "tree" {
					// The batch does not end the run (notes does not
					// terminate): Pi asks the model once more on the
					// closing window before the rollover.
					steps = append(steps, step{Text: "closing reply"})
				}
				steps = append(steps, step{Text: "new window"})
				r, p := eventRig(t, v, mode, steps)
				p.prompt("go", 1)
				es, bs := settledWindows(t, r, p, 2)
				var notesResult string
				for _, e := range es {
					if e.Message != nil && e.Message.Role == "toolResult" && strings.Contains(e.Message.text(), `plan.md"`) {
						notesResult = e.ID
					}
				}
				if notesResult == "" {
					t.Fatal("no notes tool result in the session")
				}
				var content string
				_ = json.Unmarshal(bs[1].Content, &content)
				want := "The message that called new_context also called 1 other tool; their results are in the previous window (" +
					windowOf(t, bs[0]).CurrentWindowID + "), read them with history read_item if you need them:\n- notes: item " + notesResult
				if !strings.Contains(content, want) {
					t.Errorf("boundary content:\n%s\nwant it to hold:\n%s", content, want)
				}
				reqs := r.requests()
				last := reqs[len(reqs)-1]
				if conv := last.conversation(); len(conv) == 0 || !strings.Contains(conv[0].text(), want) {
					t.Errorf("the new window's request does not start at that boundary: %s", roles(last))
				}
				checkClean(t, p, r.requests())
			})
		})
	}
}

// TestPiExtensionAwarenessAcrossRollover (docs/design.md §5.3.1; issue item "reminders
// and get_context_remaining use the window that will be current"): Local,
// reminders at every threshold (0.01%), one message calls
// get_context_remaining and new_context. get_context_remaining answers for
// the new window; no reminder is sent at the batch that rolls over; every
// reminder in the file names the window that is current where Pi
// delivered it, and the new window's first request is its boundary alone.
func TestPiExtensionAwarenessAcrossRollover(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		r, p := eventRig(t, v, "local", []step{
			tool("notes", map[string]any{"action": "write_file", "path": "plan.md", "text": "- task\n"}),
			{Calls: []call{{Name: "get_context_remaining", Arguments: map[string]any{}}, {Name: "new_context", Arguments: map[string]any{}}}},
			{Text: "new window"}, {Text: "after the reminder"}, {Text: "spare"},
		}, "CONTEXTD_REMINDER_THRESHOLDS=0.01")
		p.prompt("go", 1)
		es, bs := settledWindows(t, r, p, 2)
		rem := toolResults(es, "get_context_remaining")
		want := "A new context window starts after this message's tool calls; it holds only its boundary at first, so nearly all of its 200000 tokens are left."
		if len(rem) != 1 || rem[0] != want {
			t.Errorf("get_context_remaining = %q, want [%q]", rem, want)
		}
		current := ""
		for _, e := range chain(es, es[len(es)-1].ID) {
			if w, ok := e.window(); ok {
				current = w.CurrentWindowID
				continue
			}
			if e.Type != "custom_message" || e.CustomType != "codex-context-window" {
				continue
			}
			var d struct {
				ContextManagement windowIdentity `json:"contextManagement"`
			}
			_ = json.Unmarshal(e.Details, &d)
			if d.ContextManagement.CurrentWindowID != current {
				t.Errorf("reminder %s names window %s where window %s is current", e.ID, d.ContextManagement.CurrentWindowID, current)
			}
		}
		w1 := windowOf(t, bs[1])
		in, _ := newWindowRequests(r.requests(), w1)
		if len(in) == 0 || len(in[0].conversation()) != 1 {
			t.Fatalf("the new window's first request: %d requests, first %s", len(in), func() string {
				if len(in) == 0 {
					return "none"
				}
				return roles(in[0])
			}())
		}
		// The message before the new boundary is the batch's last result:
		// no reminder was steered at the batch that rolled over.
		prev := byID(es)[bs[1].parent()]
		if prev.Message == nil || prev.Message.Role != "toolResult" {
			t.Errorf("the new boundary follows %s %s, want the batch's last tool result", prev.Type, prev.CustomType)
		}
		checkClean(t, p, r.requests())
	})
}

// TestPiExtensionNewSessionDuringSummary (docs/design.md §5.3.1 row "/new, /resume,
// /fork, /clone"): Tree, the person starts a new session (RPC new_session,
// as /new) while the rollover's branch summary runs. Pi aborts the summary
// and replaces the session; the rollover does not happen: contextd records
// it aborted in its settled phase with the reason, the old session gets no
// new boundary, no stale-context error reaches the person,
// and they are told in one line that the rollover did not happen. (The new
// session's file appears at its first message.)
func TestPiExtensionNewSessionDuringSummary(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		r := newRig(t, v, "tree", []step{
			tool("notes", map[string]any{"action": "write_file", "path": "plan.md", "text": "- task\n"}),
			tool("new_context", nil),
			{Text: "spare"},
		})
		hold := r.holdSummary()
		r.startContextd()
		p := r.startPi()
		p.send(map[string]any{"type": "prompt", "message": "roll over"})
		hold.waitStarted(t, p)
		oldFile, oldID, _ := r.session()
		p.send(map[string]any{"type": "new_session", "id": "new"})
		hold.release(t)
		p.waitFor("the new session", 60*time.Second, func(evs []map[string]any) bool {
			for _, e := range evs {
				if e["type"] == "response" && e["id"] == "new" {
					return true
				}
			}
			return false
		})
		time.Sleep(time.Second)
		var log struct {
			Rollovers []struct {
				RolloverID string `json:"rollover_id"`
				State      string `json:"state"`
				Reason     string `json:"reason"`
			} `json:"rollovers"`
		}
		r.api("GET", "/v1/sessions/"+oldID+"/rollovers", nil, &log)
		// failed: aborted in the settled phase (coordinator ResetFailed).
		if len(log.Rollovers) != 1 || log.Rollovers[0].State != "failed" || !strings.Contains(log.Rollovers[0].Reason, "cancelled") {
			t.Errorf("old session's reset log = %+v, want one rollover aborted in its settled phase, navigation cancelled", log.Rollovers)
		}
		b, _ := os.ReadFile(oldFile)
		if n := strings.Count(string(b), `"customType":"codex-context-window"`); n != 1 {
			t.Errorf("old session holds %d boundaries, want window 0 only", n)
		}
		all := strings.Join(p.notices(""), "\n") + "\n" + p.stderr.String()
		if strings.Contains(all, "stale") {
			t.Errorf("a stale-context error reached the person:\n%s", all)
		}
		wantNotHappenedOnce(t, p, oldID)
	})
}

// TestPiExtensionNoteWritesDuringRollover (docs/design.md §5.3.1 row "Note
// writes in one message"): the message that calls new_context also writes
// two notes in the same batch. Local and Tree: both writes succeed in
// their tool results, the new window's boundary (its first request) hints
// both notes, and the model reads one back in the new window with the
// text written in the closing window.
func TestPiExtensionNoteWritesDuringRollover(t *testing.T) {
	for _, mode := range []string{"local", "tree"} {
		t.Run(mode, func(t *testing.T) {
			eachPi(t, func(t *testing.T, v piVersion) {
				steps := []step{{Calls: []call{
					{Name: "notes", Arguments: map[string]any{"action": "write_file", "path": "a.md", "text": "A-NOTE closing window\n"}},
					{Name: "notes", Arguments: map[string]any{"action": "write_file", "path": "b.md", "text": "B-NOTE\n"}},
					{Name: "new_context", Arguments: map[string]any{}},
				}}}
				if mode == "tree" {
					// notes does not terminate: Pi asks once more on the closing window.
					steps = append(steps, step{Text: "closing reply"})
				}
				steps = append(steps, tool("notes", map[string]any{"action": "read_file", "path": "a.md"}), step{Text: "read it"})
				r, p := eventRig(t, v, mode, steps)
				p.prompt("write and roll over", 1)
				es, bs := settledWindows(t, r, p, 2)
				w1 := windowOf(t, bs[1])
				for _, res := range toolResults(es, "notes") {
					if strings.Contains(res, "Unable") || strings.Contains(res, "refused") {
						t.Errorf("a notes call failed: %s", res)
					}
				}
				in, _ := newWindowRequests(r.requests(), w1)
				if len(in) < 2 {
					t.Fatalf("new-window requests = %d, want the read and its answer", len(in))
				}
				// Line counts split at "\n", so a trailing newline makes a second, empty line (contextd's hint rule).
				first := in[0].conversation()[0].text()
				for _, n := range []string{"- /root/notes/a.md (2 lines, 22 UTF-8 bytes)", "- /root/notes/b.md (2 lines, 7 UTF-8 bytes)"} {
					if !strings.Contains(first, n) {
						t.Errorf("the new window's boundary does not hint %q:\n%s", n, first)
					}
				}
				if got := lastToolResult(t, in[len(in)-1]).text(); !strings.Contains(got, "A-NOTE closing window") {
					t.Errorf("read_file in the new window = %s, want the closing window's text", got)
				}
				checkClean(t, p, r.requests())
			})
		})
	}
}
