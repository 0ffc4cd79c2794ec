package e2e

// Clones and forks with real Pi (docs/design.md §4 "Clones and forks";
// case-11 of the bug reports, copied as this test): after a Tree rollover,
// RPC clone (or fork at window 1's user message) writes a copy holding the
// active path only. In the copy, the summary stays hidden and history
// recovers window 0's bash output through the original file.

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sessionFiles lists the session files Pi wrote under the rig.
func (r *rig) sessionFiles() []string {
	files, _ := filepath.Glob(filepath.Join(r.sessions, "*", "*.jsonl"))
	return files
}

// readSession reads one session file: header fields, then its entries.
func readSession(t *testing.T, file string) (id, parent string, es []entry) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	var hdr struct {
		ID            string `json:"id"`
		ParentSession string `json:"parentSession"`
	}
	if err := json.Unmarshal(lines[0], &hdr); err != nil {
		t.Fatal(err)
	}
	for _, l := range lines[1:] {
		var e entry
		if err := json.Unmarshal(l, &e); err != nil {
			t.Fatal(err)
		}
		es = append(es, e)
	}
	return hdr.ID, hdr.ParentSession, es
}

func TestPiExtensionCloneAndFork(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		for _, op := range []string{"clone", "fork"} {
			t.Run(op, func(t *testing.T) {
				r := newRig(t, v, "tree", []step{
					tool("bash", map[string]any{"command": factCommand}),                                                            // 0
					tool("notes", map[string]any{"action": "write_file", "path": "plan.md", "text": "- the fact is in window 0\n"}), // 1
					tool("new_context", nil),           // 2: ends the run
					{Text: "window 1 ready"},           // 3: the boundary's turn
					{Text: "first answer in window 1"}, // 4
				})
				r.startContextd()
				p := r.startPi()
				p.prompt("find the fact", 2)
				p.prompt("question one", 3)
				files := r.sessionFiles()
				if len(files) != 1 {
					t.Fatalf("session files %v, want 1", files)
				}
				orig := files[0]
				_, _, oes := readSession(t, orig)
				cmd := map[string]any{"type": "clone"}
				if op == "fork" {
					for _, e := range oes {
						if e.Message != nil && e.Message.Role == "user" && e.Message.text() == "question one" {
							cmd = map[string]any{"type": "fork", "entryId": e.ID}
						}
					}
				}
				// Pi loads the extensions again for the copy: the faux
				// provider reads this script and counts steps from 0.
				b, _ := json.Marshal([]step{tool("history", searchPrevious), tool("history", readFirstHit), {Text: "done"}})
				if err := os.WriteFile(r.script, b, 0o600); err != nil {
					t.Fatal(err)
				}
				before := len(r.requests())
				if resp := p.command(cmd); resp["success"] != true {
					t.Fatalf("%s: %v", op, resp)
				}
				p.prompt("what was the fact?", 4)
				var copyFile string
				for _, f := range r.sessionFiles() {
					if f != orig {
						copyFile = f
					}
				}
				if copyFile == "" {
					t.Fatalf("no copy written; files %v", r.sessionFiles())
				}
				sid, parent, es := readSession(t, copyFile)
				if parent != orig {
					t.Errorf("copy's parentSession = %q, want %q", parent, orig)
				}
				all := r.requests()
				reqs := all[before:]
				for _, step := range []int{0, 1, 2} {
					for _, m := range turn(t, reqs, step).conversation() {
						if strings.Contains(m.text(), "the archived window's work") {
							t.Errorf("request %d in the copy holds the Tree summary: it must stay hidden", step)
						}
					}
				}
				search := lastToolResult(t, turn(t, reqs, 1))
				if search.IsError || !strings.Contains(search.text(), `"tool_name":"bash"`) || !strings.Contains(search.text(), fact) {
					t.Errorf("search_contents in the copy: %s", search.text())
				}
				read := lastToolResult(t, turn(t, reqs, 2))
				if read.IsError || !strings.Contains(read.text(), fact+`\n`) {
					t.Errorf("read_item in the copy: %s", read.text())
				}
				var st struct {
					Archives int               `json:"archives"`
					Problems []json.RawMessage `json:"problems"`
				}
				r.api("GET", "/v1/sessions/"+sid, nil, &st)
				if st.Archives != 1 || len(st.Problems) != 0 {
					t.Errorf("copy state: archives %d problems %s; want 1 archive, no problem", st.Archives, st.Problems)
				}
				if len(es) == len(oes) {
					t.Errorf("the copy holds all %d entries of the original: Pi copies the active path only", len(es))
				}
				checkClean(t, p, all)
			})
		}
	})
}
