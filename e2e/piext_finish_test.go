package e2e

// An interrupted Tree rollover finished with real Pi (docs/design.md §5.3
// "Interrupted rollovers"): contextd is killed (kill -9) while Pi writes
// the rollover's branch summary, so the commit fails and the branch ends
// in the summary. With contextd's state kept, `/contextd finish` in the
// same Pi finishes it; with the state directory lost, contextd starts
// afresh and Pi resumed with --continue finishes it at session_start. Either
// way the archived window is listed and readable, the notes are the ones
// written before the crash and the hint's sizes are theirs.

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// planText is the note written in window 0.
const planText = "- the fact is in window 0's bash output\n"

func TestPiExtensionFinishInterruptedRollover(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		for _, lost := range []bool{false, true} {
			t.Run(map[bool]string{false: "state-kept", true: "state-lost"}[lost], func(t *testing.T) {
				after := []step{tool("history", searchPrevious), tool("history", readFirstHit), {Text: "done"}}
				before := []step{
					tool("notes", map[string]any{"action": "write_file", "path": "plan.md", "text": planText}), // 0
					tool("bash", map[string]any{"command": factCommand}),                                       // 1
					tool("new_context", nil), // 2
				}
				if !lost {
					before = append(before, after...) // the same Pi goes on
				}
				r := newRig(t, v, "tree", before)
				hold := r.holdSummary()
				r.startContextd()
				p := r.startPi()
				p.send(map[string]any{"type": "prompt", "message": "find the fact, then roll over"})
				hold.waitStarted(t, p)
				r.stopContextd(true) // kill -9 while Pi writes the summary
				hold.release(t)
				p.waitFor("the rollover error", 60*time.Second, func([]map[string]any) bool { return len(p.notices("error")) > 0 })
				if _, _, es := r.session(); len(boundaries(es)) != 1 {
					t.Fatalf("boundaries before finishing = %d, want 1", len(boundaries(es)))
				}
				n := len(r.requests())
				if lost {
					p.stop()
					if err := os.RemoveAll(r.state); err != nil {
						t.Fatal(err)
					}
					r.startContextd()
					b, _ := json.Marshal(after)
					if err := os.WriteFile(r.script, b, 0o600); err != nil {
						t.Fatal(err)
					}
					p = r.startPi("--continue") // session_start finishes it
				} else {
					r.startContextd()
					p.command(map[string]any{"type": "prompt", "message": "/contextd finish"})
					// The finish report among the info notices (the new window's
					// "context window 1 started" notice may come first).
					report := func() string {
						for _, n := range p.notices("info") {
							if strings.HasPrefix(n, "contextd: finished the interrupted rollover ") {
								return n
							}
						}
						return ""
					}
					p.waitFor("the finish report", 30*time.Second, func([]map[string]any) bool { return report() != "" })
					if got := report(); !strings.HasSuffix(got, ": appended the archive marker, the notes snapshot and the new window's boundary") {
						t.Errorf("/contextd finish said %q; info notices: %q", got, p.notices("info"))
					}
				}
				_, sid, es := r.session()
				bs := boundaries(es)
				if len(bs) != 2 {
					t.Fatalf("boundaries after finishing = %d, want 2", len(bs))
				}
				r.wantFinished(sid)
				// The notes are the ones written before the crash, and the
				// hint gives their size.
				var nf struct {
					File *struct {
						Content string `json:"content"`
					} `json:"file"`
				}
				r.api("POST", "/alpha/notes/v2/read_file", map[string]any{"path": "plan.md", "context": map[string]any{"session_id": sid}}, &nf)
				if nf.File == nil || nf.File.Content != planText {
					t.Errorf("notes read_file plan.md = %+v, want %q", nf.File, planText)
				}
				var content string
				_ = json.Unmarshal(bs[1].Content, &content)
				// Lines as notes counts them: the text split at "\n".
				if want := fmt.Sprintf("- /root/notes/plan.md (2 lines, %d UTF-8 bytes)", len(planText)); !strings.Contains(content, want) {
					t.Errorf("the new boundary's hint lacks %q:\n%s", want, content)
				}
				// history reaches window 0 from window 1.
				p.prompt("what was the fact?", count(p.snapshot(), "agent_settled")+1)
				reqs := r.requests()[n:]
				first := map[bool]int{false: 3, true: 0}[lost]
				search := lastToolResult(t, turn(t, reqs, first+1))
				if search.IsError || !strings.Contains(search.text(), `"tool_name":"bash"`) || !strings.Contains(search.text(), fact) {
					t.Errorf("search_contents after finishing: %s", search.text())
				}
				read := lastToolResult(t, turn(t, reqs, first+2))
				if read.IsError || !strings.Contains(read.text(), fact) {
					t.Errorf("read_item after finishing: %s", read.text())
				}
				for _, q := range reqs {
					if anyContains(q, "the archived window's work") {
						t.Errorf("request (step %d) holds the Tree summary: it must be hidden once the manifest is in", q.Step)
					}
				}
			})
		}
	})
}
