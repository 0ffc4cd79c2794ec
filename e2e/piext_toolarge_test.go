package e2e

// A session with more entries than contextd's --memory-limit can index
// (docs/security.md N11, store/toolarge.go): contextd refuses it with the
// problem session_too_large; the Pi user is told once, in one sentence,
// and Pi goes on with its own context; restarted with a larger limit,
// contextd indexes the session and manages it again. Local and Tree mode,
// on both Pis.

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
)

// tooLargeWarning is what the extension shows under --memory-limit 16MiB:
// store.EntryBudget(16 MiB) = 16 MiB × 3/4 / 352 = 35,746 entries, and the
// file's 36,000-odd entries fit the doubled limit's 71,492.
const tooLargeWarning = "contextd: this session has more than 35746 entries, more than contextd's memory limit (--memory-limit 16MiB) can index; restart contextd with --memory-limit 32MiB and /reload, or start a new Pi session (/new); until then Pi uses its own context"

// sideEntries appends n tiny user messages to the session file at path on
// a side branch off its first entry, then a custom entry back on leaf, so
// that the file holds many entries while Pi's branch stays short.
func sideEntries(t *testing.T, path, first, leaf string, n int) {
	t.Helper()
	var b bytes.Buffer
	parent := first
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("%08x", i)
		fmt.Fprintf(&b, `{"type":"message","id":%q,"parentId":%q,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"x","timestamp":0}}`+"\n", id, parent)
		parent = id
	}
	fmt.Fprintf(&b, `{"type":"custom","customType":"e2e-back","data":{},"id":"back0001","parentId":%q,"timestamp":"2026-01-01T00:00:00.000Z"}`+"\n", leaf)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b.Bytes()); err != nil {
		t.Fatal(err)
	}
}

func TestPiExtensionSessionTooLarge(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		for _, mode := range []string{"local", "tree"} {
			t.Run(mode, func(t *testing.T) { tooLargeScenario(t, v, mode) })
		}
	})
}

// tooLargeScenario is TestPiExtensionSessionTooLarge in one mode.
func tooLargeScenario(t *testing.T, v piVersion, mode string) {
	r := newRig(t, v, mode, []step{{Text: "one"}})
	r.startContextd("--memory-limit", "16MiB")
	a := r.startPi()
	a.prompt("first", 1)
	a.stop()
	path, sid, es := r.session()
	sideEntries(t, path, es[0].ID, es[len(es)-1].ID, 36000)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	// Too large: one warning, and the turn reaches the provider with
	// Pi's own (short) branch.
	b := r.startPi("--continue")
	b.prompt("second", 1)
	if w := b.notices("warning"); len(w) != 1 || w[0] != tooLargeWarning {
		t.Errorf("warnings %q, want exactly %q", w, tooLargeWarning)
	}
	if e := b.notices("error"); len(e) != 0 {
		t.Errorf("UI errors: %q", e)
	}
	var st struct {
		State    string `json:"state"`
		Problems []struct {
			Reason string `json:"reason"`
		} `json:"problems"`
	}
	r.api("GET", "/v1/sessions/"+sid, nil, &st)
	if st.State != "too_large" || len(st.Problems) != 1 || st.Problems[0].Reason != "too_large" {
		t.Errorf("GET session: %+v, want state too_large with one too_large problem", st)
	}
	b.stop()
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(after, before) {
		t.Error("the session file's bytes before the second Pi changed")
	}

	// A larger limit: indexed and managed again, no warning.
	r.stopContextd(false)
	r.startContextd("--memory-limit", "32MiB")
	c := r.startPi("--continue")
	c.prompt("third", 1)
	if w := c.notices("warning"); len(w) != 0 {
		t.Errorf("under 32 MiB: warnings %q, want none", w)
	}
	if e := c.notices("error"); len(e) != 0 {
		t.Errorf("under 32 MiB: UI errors %q", e)
	}
	var ok struct {
		State   string `json:"state"`
		Entries int    `json:"entries"`
	}
	r.api("GET", "/v1/sessions/"+sid, nil, &ok)
	if ok.State != "ok" || ok.Entries < 36000 {
		t.Errorf("under 32 MiB: GET session state %q entries %d, want ok and over 36,000", ok.State, ok.Entries)
	}
	c.stop()

	// Every provider request: one per Pi, each Pi's branch only (never
	// the side branch's messages), the prompts in order.
	reqs := r.requests()
	checkPairing(t, reqs)
	want := [][]string{{"first"}, {"first", "one", "second"}, {"first", "one", "second", "one", "third"}}
	if len(reqs) != len(want) {
		t.Fatalf("%d provider requests, want %d", len(reqs), len(want))
	}
	for i, q := range reqs {
		var got []string
		for _, m := range q.conversation() {
			if m.Role == "user" && strings.HasPrefix(m.text(), "<") {
				continue // the window's boundary (a custom message)
			}
			got = append(got, m.text())
		}
		if q.Kind != "turn" || strings.Join(got, "|") != strings.Join(want[i], "|") {
			t.Errorf("provider request %d (%s): texts %q, want %q", i, q.Kind, got, want[i])
		}
	}
}
