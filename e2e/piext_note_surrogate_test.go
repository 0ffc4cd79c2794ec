package e2e

// A note holding a lone surrogate written to the session file without
// contextd (docs/design.md §5.1; notes.MsgFileLoneSurrogate): contextd
// refuses such text in a note write (422), and a note entry that reached
// the file another way (here Pi's own SessionManager, as e2e/pi-append.mjs
// plays the extension's write side) is never answered with U+FFFD in its
// place: the model's read_file and search_contents get the one sentence
// naming the file, the surrogate and what to do, a new_context (whose note
// snapshot would carry the text) does not open a window and says the same
// to the model and the person, and after write_file the note reads again.

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestPiExtensionNoteLoneSurrogateFromTheFile(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		r := newRig(t, v, "local", []step{{Text: "one"}})
		r.startContextd()
		p := r.startPi()
		p.prompt("first", 1)
		p.stop()
		file, _, _ := r.session()
		// "half \ud83d moon": JSON.stringify's escape of a lone high surrogate.
		entry := `[{"type":"custom","customType":"codex-context-note","data":{"protocol":1,"action":"write","path":"/root/notes/moon.md","text":"half \ud83d moon\nfull moon","timestamp":1783342028114}}]`
		cmd := exec.Command(NodeBinary(t), filepath.Join(Dir(), "pi-append.mjs"), "append", file)
		cmd.Dir = Dir()
		cmd.Stdin = strings.NewReader(entry)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("pi-append: %v\n%s", err, out)
		}
		if !strings.Contains(r.readFile(file), `half \ud83d moon`) {
			t.Fatalf("the session file does not hold the lone surrogate escape")
		}
		// The second Pi's script, from step 0: each tool result is in the
		// request of the step after its call.
		script, err := json.Marshal([]step{
			tool("notes", map[string]any{"action": "read_file", "path": "moon.md"}),     // 0
			tool("notes", map[string]any{"action": "search_contents", "query": "moon"}), // 1
			tool("new_context", nil), // 2: its note snapshot is refused
			tool("notes", map[string]any{"action": "write_file", "path": "moon.md", "text": "half moon\n"}), // 3
			tool("notes", map[string]any{"action": "read_file", "path": "moon.md"}),                         // 4
			{Text: "two"}, // 5
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(r.script, script, 0o600); err != nil {
			t.Fatal(err)
		}
		p = r.startPi("--continue")
		p.prompt("read the moon note", 1)
		reqs := r.requests()
		refusal := `Note /root/notes/moon.md holds a lone surrogate \ud83d at line 1, character 6 (half of a UTF-16 pair, which a note cannot hold; it was written to the session file without contextd); rewrite the file with write_file`
		for _, step := range []int{1, 2} { // the requests after read_file and search_contents
			got := lastToolResult(t, turn(t, reqs, step)).text()
			if !strings.Contains(got, refusal) || strings.Contains(got, "\uFFFD") {
				t.Errorf("the tool result before step %d = %q, want the refusal %q", step, got, refusal)
			}
		}
		// new_context in the same window: the note snapshot of the closing
		// window is refused with the same sentence, which the model gets
		// in its window's notice and the person in one line.
		q := turn(t, reqs, 3).conversation()
		if got := q[len(q)-1].text(); !strings.Contains(got, "The new context window did not open") || !strings.Contains(got, refusal) {
			t.Errorf("the model's notice after new_context = %q, want the refusal in it", got)
		}
		if got := p.notices("error"); len(got) != 1 || !strings.Contains(got[0], refusal) {
			t.Errorf("the person's errors %q, want one holding the refusal", got)
		}
		if got := lastToolResult(t, turn(t, reqs, 5)).text(); !strings.Contains(got, "half moon") || strings.Contains(got, "lone surrogate") {
			t.Errorf("read_file after write_file = %q, want the rewritten note", got)
		}
		plainAndPaired(t, reqs, p.notices(""))
	})
}
