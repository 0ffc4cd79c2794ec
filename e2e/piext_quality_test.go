package e2e

// Rollover quality (docs/rollover-quality.md) end to end on Pi 0.85.1 and 1.6.0: the notes
// guard of new_context (warn and refuse), get_context_remaining, usage
// reminders, the reset log, and recovering a dropped identifier after a
// rollover.

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The guard texts of extension/src/quality.ts (GUARD_WARNING, GUARD_REFUSAL).
const (
	guardWarning = "Warning: nothing was checkpointed in notes during this context window, so its task state is not carried over; the new context window starts anyway."
	guardRefusal = "new_context refused: no note was written in this context window. Checkpoint the active request, state and known history IDs with notes write_file or append_to_file first, then call new_context again."
	ncResult     = "A new context window will start without summarizing conversation history."
)

// resetLog is GET /v1/sessions/{id}/rollovers, the fields checked here.
type resetLog struct {
	Rollovers []struct {
		RolloverID string `json:"rollover_id"`
		Source     string `json:"source"`
		Mode       string `json:"mode"`
		State      string `json:"state"`
		From       struct {
			ID     string `json:"id"`
			Number int    `json:"number"`
		} `json:"from"`
		To *struct {
			ID     string `json:"id"`
			Number int    `json:"number"`
		} `json:"to"`
		Archived *struct {
			FirstEntryID string `json:"first_entry_id"`
			LastEntryID  string `json:"last_entry_id"`
			Entries      int    `json:"entries"`
		} `json:"archived"`
		SummarySHA       string `json:"summary_sha256"`
		NoteFiles        int    `json:"note_files"`
		WindowNoteWrites int    `json:"window_note_writes"`
	} `json:"rollovers"`
}

// toolResults returns the text of every tool result of the named tool in
// the session file, in file order.
func toolResults(es []entry, name string) []string {
	calls := map[string]bool{}
	for _, e := range es {
		if e.Message != nil && e.Message.Role == "assistant" {
			for _, b := range e.Message.blocks() {
				if b.Type == "toolCall" && b.Name == name {
					calls[b.ID] = true
				}
			}
		}
	}
	var out []string
	for _, e := range es {
		if e.Message != nil && e.Message.Role == "toolResult" && calls[e.Message.ToolCallID] {
			out = append(out, e.Message.text())
		}
	}
	return out
}

// runsFor is the number of agent runs of one prompt with k rollovers: a
// Tree rollover ends the run and its boundary starts the next one.
func runsFor(mode string, rollovers int) int {
	if mode == "tree" {
		return 1 + rollovers
	}
	return 1
}

// TestPiExtensionNotesGuard: new_context in a window that wrote no note.
// warn (default): the rollover runs and the tool result carries the one
// warning sentence; refuse: the tool result is the refusal, no boundary
// is appended, and after a note write the next new_context rolls over
// without a warning. The reset log records the notes written in each
// closed window. The warn run also calls get_context_remaining and gets a
// usage reminder (threshold set to 0.01% so that the first turn reaches it).
func TestPiExtensionNotesGuard(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		for _, mode := range []string{"local", "tree"} {
			t.Run(mode+"/warn", func(t *testing.T) {
				r := newRig(t, v, mode, []step{
					tool("get_context_remaining", nil),                   // 0
					tool("bash", map[string]any{"command": factCommand}), // 1
					tool("new_context", nil),                             // 2: no note written
					{Text: "done"},                                       // 3
				})
				r.env = append(r.env, "CONTEXTD_REMINDER_THRESHOLDS=0.01")
				r.startContextd()
				p := r.startPi()
				p.prompt("find the fact", runsFor(mode, 1))
				_, sid, es := r.session()
				bs := boundaries(es)
				if len(bs) != 2 {
					t.Fatalf("boundaries = %d, want 2: warn lets the rollover run", len(bs))
				}
				nc := toolResults(es, "new_context")
				want := ncResult + "\n" + guardWarning
				if len(nc) != 1 || nc[0] != want {
					t.Errorf("new_context results = %q, want [%q]", nc, want)
				}
				rem := toolResults(es, "get_context_remaining")
				if len(rem) != 1 || !regexp.MustCompile(`^You have \d+ tokens left in this context window \(\d+ of 200000 used, \d+%\)\.$`).MatchString(rem[0]) {
					t.Errorf("get_context_remaining results = %q", rem)
				}
				// Exactly one reminder in window 0 (once per window), kind
				// reminder, with window 0's identity.
				w0 := windowOf(t, bs[0])
				var reminders []string
				for _, e := range chain(es, bs[1].ID) {
					if e.Type != "custom_message" || e.CustomType != "codex-context-window" {
						continue
					}
					var d struct {
						ContextManagement windowIdentity `json:"contextManagement"`
					}
					_ = json.Unmarshal(e.Details, &d)
					if d.ContextManagement.Kind == "window" {
						continue
					}
					var content string
					_ = json.Unmarshal(e.Content, &content)
					reminders = append(reminders, d.ContextManagement.Kind+" "+d.ContextManagement.CurrentWindowID+" "+content)
				}
				wantRem := regexp.MustCompile(`^reminder ` + w0.CurrentWindowID + ` <context_window_reminder>\n\d+% remaining\. Checkpoint the active request, state and known history IDs in notes, then call new_context before continuing work\.\n</context_window_reminder>$`)
				if mode == "local" && (len(reminders) != 1 || !wantRem.MatchString(reminders[0])) {
					t.Errorf("window 0 reminders = %q, want one reminder", reminders)
				}
				var log resetLog
				r.api("GET", "/v1/sessions/"+sid+"/rollovers", nil, &log)
				if len(log.Rollovers) != 1 {
					t.Fatalf("reset log = %+v, want 1 rollover", log)
				}
				rl := log.Rollovers[0]
				// Local rollovers go through contextd's state machine too (docs/design.md §5.3.1).
				wantSource := "state+file"
				if rl.Mode != mode || rl.State != "completed" || rl.Source != wantSource || rl.From.Number != 0 || rl.To == nil || rl.To.Number != 1 ||
					rl.WindowNoteWrites != 0 || rl.NoteFiles != 0 || rl.Archived == nil || rl.Archived.FirstEntryID != bs[0].ID {
					t.Errorf("reset log entry = %+v", rl)
				}
				if (mode == "tree") != (rl.SummarySHA != "" && rl.RolloverID != "") {
					t.Errorf("summary digest %q, rollover id %q in %s mode", rl.SummarySHA, rl.RolloverID, mode)
				}
				// /contextd shows the last rollovers.
				p.command(map[string]any{"type": "prompt", "message": "/contextd"})
				p.waitFor("the /contextd status", 30*time.Second, func([]map[string]any) bool { return p.notice("contextd mode:") != "" })
				status := p.notice("contextd mode:")
				noun := "entries"
				if rl.Archived.Entries == 1 {
					noun = "entry"
				}
				wantLine := fmt.Sprintf("  window 0 → 1 %s completed; %d %s (", mode, rl.Archived.Entries, noun)
				for _, w := range []string{"rollovers: 1 (last 1):", wantLine, ") archived; ", "; no note written in this window"} {
					if !strings.Contains(status, w) {
						t.Errorf("/contextd status lacks %q:\n%s", w, status)
					}
				}
				if n := p.notices("error"); len(n) != 0 {
					t.Errorf("UI errors: %q", n)
				}
				checkPairing(t, r.requests())
			})
			t.Run(mode+"/refuse", func(t *testing.T) {
				r := newRig(t, v, mode, []step{
					tool("new_context", nil), // 0: refused
					tool("notes", map[string]any{"action": "write_file", "path": "plan.md", "text": "- find the fact\n"}), // 1
					tool("new_context", nil), // 2: rolls over
					{Text: "done"},           // 3
				})
				r.env = append(r.env, "CONTEXTD_NOTES_GUARD=refuse", "CONTEXTD_REMINDER_THRESHOLDS=off")
				r.startContextd()
				p := r.startPi()
				p.prompt("plan first", runsFor(mode, 1))
				_, sid, es := r.session()
				bs := boundaries(es)
				if len(bs) != 2 {
					t.Fatalf("boundaries = %d, want 2 (window 0, then the one rollover after the note)", len(bs))
				}
				nc := toolResults(es, "new_context")
				if len(nc) != 2 || nc[0] != guardRefusal || nc[1] != ncResult {
					t.Errorf("new_context results = %q, want the refusal then the plain result", nc)
				}
				// Nothing happened at the refusal: the entry after it is the
				// model's next call, in window 0.
				var log resetLog
				r.api("GET", "/v1/sessions/"+sid+"/rollovers", nil, &log)
				if len(log.Rollovers) != 1 || log.Rollovers[0].WindowNoteWrites != 1 || log.Rollovers[0].NoteFiles != 1 || log.Rollovers[0].State != "completed" {
					t.Errorf("reset log = %+v, want one completed rollover with 1 note write", log)
				}
				if n := p.notices("error"); len(n) != 0 {
					t.Errorf("UI errors: %q", n)
				}
				checkPairing(t, r.requests())
			})
		}
	})
}

// The identifier only window 0's bash output holds: the command prints it
// from two pieces, so the call's arguments do not contain it.
const (
	droppedPath    = "/srv/cache/shard-4711.db"
	droppedCommand = "printf 'cache at /srv/cache/%s\\n' shard-4711.db"
)

// TestPiExtensionRecoverDropped: after a rollover, GET …/windows/{w0}/cut
// lists the path only a tool output of window 0 held as dropped, with
// that tool result as its item; the scripted model gets it back with
// history search_contents (window_id from the boundary) and read_item.
func TestPiExtensionRecoverDropped(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		for _, mode := range []string{"local", "tree"} {
			t.Run(mode, func(t *testing.T) {
				r := newRig(t, v, mode, []step{
					tool("notes", map[string]any{"action": "write_file", "path": "plan.md", "text": "- find the cache file\n"}), // 0
					tool("bash", map[string]any{"command": droppedCommand}),                                                     // 1
					tool("new_context", nil), // 2
					tool("history", map[string]any{"action": "search_contents", "query": droppedPath, "window_id": "{{re:Previous context window id: ([0-9a-f-]+)}}"}), // 3
					tool("history", readFirstHit), // 4
					{Text: "done"},                // 5
				})
				r.env = append(r.env, "CONTEXTD_REMINDER_THRESHOLDS=off")
				r.startContextd()
				p := r.startPi()
				p.prompt("find the cache file", runsFor(mode, 1))
				_, sid, es := r.session()
				bs := boundaries(es)
				if len(bs) != 2 {
					t.Fatalf("boundaries = %d, want 2", len(bs))
				}
				w0 := windowOf(t, bs[0])
				var out entry
				for _, e := range es {
					if e.Message != nil && e.Message.Role == "toolResult" && e.Message.text() == "cache at "+droppedPath+"\n" {
						out = e // the bash result (history results hold it in JSON)
					}
				}
				if out.ID == "" {
					t.Fatal("no bash result with the path")
				}
				var c struct {
					NextWindowID string `json:"next_window_id"`
					Identifiers  []struct {
						Kind    string   `json:"kind"`
						Value   string   `json:"value"`
						ItemIDs []string `json:"item_ids"`
						Carried bool     `json:"carried"`
					} `json:"identifiers"`
				}
				if st := r.api("GET", "/v1/sessions/"+sid+"/windows/"+w0.CurrentWindowID+"/cut", nil, &c); st != 200 {
					t.Fatalf("cut: status %d", st)
				}
				found := false
				for _, id := range c.Identifiers {
					if id.Value == droppedPath {
						found = true
						if id.Kind != "path" || id.Carried || len(id.ItemIDs) != 1 || id.ItemIDs[0] != out.ID {
							t.Errorf("cut lists %+v, want path dropped in item %s", id, out.ID)
						}
					}
				}
				if !found || c.NextWindowID != windowOf(t, bs[1]).CurrentWindowID {
					t.Errorf("cut = %+v, want %s dropped", c, droppedPath)
				}
				reqs := r.requests()
				if anyContains(turn(t, reqs, 3), droppedPath) {
					t.Errorf("the request after the rollover still holds %s", droppedPath)
				}
				search := lastToolResult(t, turn(t, reqs, 4))
				if search.IsError || !strings.Contains(search.text(), `"item_id":"`+out.ID+`"`) || !strings.Contains(search.text(), `"window_id":"`+w0.CurrentWindowID+`"`) {
					t.Errorf("search_contents result: %s", search.text())
				}
				read := lastToolResult(t, turn(t, reqs, 5))
				if read.IsError || !strings.Contains(read.text(), "cache at "+droppedPath) || !strings.Contains(read.text(), `"item_id":"`+out.ID+`"`) {
					t.Errorf("read_item result: %s", read.text())
				}
				checkClean(t, p, reqs)
			})
		}
	})
}
