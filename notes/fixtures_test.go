package notes

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The fixtures in testdata/pi-tree were written by real Pi 0.85 code running
// the seed extension (testdata/pi-tree/README.md). They are the oracles of
// these tests: the expected replayed note state, every notes tool result,
// and every thread hint inside a window marker.

var fixtureNames = []string{"local-basic", "tree-basic", "tree-multi", "tree-manual-summary", "tree-bad-manifests-small"}

type rawEntry struct {
	Type       string          `json:"type"`
	ID         string          `json:"id"`
	ParentID   *string         `json:"parentId"`
	CustomType string          `json:"customType"`
	Data       json.RawMessage `json:"data"`
	Content    json.RawMessage `json:"content"`
	Message    *struct {
		Role       string          `json:"role"`
		ToolName   string          `json:"toolName"`
		ToolCallID string          `json:"toolCallId"`
		Content    json.RawMessage `json:"content"`
		Details    json.RawMessage `json:"details"`
	} `json:"message"`
}

type expectedNote struct {
	Path      string `json:"path"`
	Bytes     int    `json:"bytes"`
	CreatedAt int64  `json:"createdAt"`
	UpdatedAt int64  `json:"updatedAt"`
	SHA256    string `json:"sha256"`
	Text      string `json:"text"`
}

type fixture struct {
	name     string
	entries  []*rawEntry
	byID     map[string]*rawEntry
	active   []string
	expected []expectedNote
}

func loadFixture(t *testing.T, name string) *fixture {
	t.Helper()
	dir := filepath.Join("..", "testdata", "pi-tree")
	f, err := os.Open(filepath.Join(dir, name+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fx := &fixture{name: name, byID: map[string]*rawEntry{}}
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var e rawEntry
			if jerr := json.Unmarshal(line, &e); jerr != nil {
				t.Fatalf("%s: %v", name, jerr)
			}
			if e.Type != "session" {
				fx.entries = append(fx.entries, &e)
				fx.byID[e.ID] = &e
			}
		}
		if err != nil {
			break
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, name+".expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var exp struct {
		ActiveBranchIDs   []string       `json:"activeBranchIds"`
		NotesActiveBranch []expectedNote `json:"notesActiveBranch"`
	}
	if err := json.Unmarshal(raw, &exp); err != nil {
		t.Fatal(err)
	}
	fx.active, fx.expected = exp.ActiveBranchIDs, exp.NotesActiveBranch
	return fx
}

// pathTo returns the entry ids from the root to id, inclusive.
func (fx *fixture) pathTo(t *testing.T, id string) []string {
	t.Helper()
	var rev []string
	for cur := id; cur != ""; {
		e := fx.byID[cur]
		if e == nil {
			t.Fatalf("%s: missing entry %s", fx.name, cur)
		}
		rev = append(rev, cur)
		if e.ParentID == nil {
			break
		}
		cur = *e.ParentID
	}
	out := make([]string, len(rev))
	for i, id := range rev {
		out[len(rev)-1-i] = id
	}
	return out
}

// replay decodes and replays the note entries among ids.
func (fx *fixture) replay(t *testing.T, ids []string) *State {
	t.Helper()
	var evs []Event
	for _, id := range ids {
		e := fx.byID[id]
		if e.Type != "custom" || (e.CustomType != CustomTypeNote && e.CustomType != CustomTypeNoteSnapshot) {
			continue
		}
		ev, err := DecodeEvent(e.ID, e.CustomType, e.Data)
		if err != nil {
			t.Fatalf("%s: DecodeEvent(%s): %v", fx.name, id, err)
		}
		evs = append(evs, ev)
	}
	s := Replay(evs)
	if len(s.Skipped) > 0 {
		t.Fatalf("%s: skipped %v", fx.name, s.Skipped)
	}
	return s
}

func TestReplayFixturesActiveBranch(t *testing.T) {
	for _, name := range fixtureNames {
		t.Run(name, func(t *testing.T) {
			fx := loadFixture(t, name)
			s := fx.replay(t, fx.active)
			got := s.Files()
			if len(got) != len(fx.expected) {
				t.Fatalf("got %d files, want %d", len(got), len(fx.expected))
			}
			for i, want := range fx.expected {
				g := got[i]
				sum := sha256.Sum256([]byte(g.Text))
				if g.Path != want.Path || len(g.Text) != want.Bytes || g.CreatedAt != want.CreatedAt ||
					g.UpdatedAt != want.UpdatedAt || hex.EncodeToString(sum[:]) != want.SHA256 || g.Text != want.Text {
					t.Errorf("file %d = {%s %d %d %d %x}, want %+v", i, g.Path, len(g.Text), g.CreatedAt, g.UpdatedAt, sum, want)
				}
			}
		})
	}
}

// The expected values of three fixtures (local-basic, tree-basic and
// tree-multi, testdata/pi-tree/README.md), spelled out
// so a regenerated fixture cannot silently change them.
func TestReplayFixturesPinned(t *testing.T) {
	want := map[string][]string{
		"local-basic": {
			"/root/notes/backlog.md 73 2026-07-06T13:15:13.461Z 2026-07-06T13:15:13.461Z",
			"/root/notes/checkpoint.md 947 2026-07-06T12:56:58.543Z 2026-07-06T13:09:05.034Z",
			"/root/notes/decisions.md 79 2026-07-06T13:02:12.881Z 2026-07-06T13:02:12.881Z",
			"/root/notes/plan.md 283 2026-07-06T12:47:08.114Z 2026-07-06T12:47:08.114Z",
			"/root/notes/progress.md 695 2026-07-06T12:51:59.207Z 2026-07-06T13:15:46.774Z",
		},
		"tree-basic": {
			"/root/notes/checkpoint.md 469 2026-07-07T16:38:00.358Z 2026-07-07T16:38:00.358Z",
			"/root/notes/plan.md 263 2026-07-07T16:30:35.097Z 2026-07-07T16:30:35.097Z",
			"/root/notes/progress.md 469 2026-07-07T16:34:44.760Z 2026-07-07T16:43:49.755Z",
		},
		"tree-multi": {
			"/root/notes/backlog.md 103 2026-07-08T17:25:02.563Z 2026-07-08T17:25:02.563Z",
			"/root/notes/checkpoint.md 1439 2026-07-08T16:52:43.975Z 2026-07-08T17:28:42.015Z",
			"/root/notes/decisions.md 198 2026-07-08T16:47:47.742Z 2026-07-08T17:12:00.315Z",
			"/root/notes/plan.md 553 2026-07-08T16:47:10.778Z 2026-07-08T17:33:31.137Z",
			"/root/notes/progress.md 301 2026-07-08T16:57:07.440Z 2026-07-08T16:57:07.440Z",
		},
	}
	for name, lines := range want {
		fx := loadFixture(t, name)
		res, err := ListFilesByPrefix(fx.replay(t, fx.active), "", ListFilesByPrefixArgs{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range res.Files {
			got = append(got, strings.Join([]string{f.Path, itoa(f.Bytes), f.CreatedAt, f.UpdatedAt}, " "))
		}
		if strings.Join(got, "\n") != strings.Join(lines, "\n") {
			t.Errorf("%s:\n got %q\nwant %q", name, got, lines)
		}
	}
}

// Every notes tool call in the fixtures (write_file, append_to_file,
// read_file) is re-run against the state of its own branch; the result must
// equal the recorded toolResult details, and a write's planned entry must
// equal the entry the seed appended.
func TestFixtureToolResults(t *testing.T) {
	for _, name := range fixtureNames {
		t.Run(name, func(t *testing.T) {
			fx := loadFixture(t, name)
			checked := 0
			for _, e := range fx.entries {
				if e.Type != "message" || e.Message.Role != "toolResult" || e.Message.ToolName != "notes" {
					continue
				}
				args := fx.toolArgs(t, e)
				var action string
				if err := json.Unmarshal(args["action"], &action); err != nil {
					t.Fatal(err)
				}
				var got any
				switch action {
				case "write_file", "append_to_file":
					note := fx.byID[*e.ParentID]
					if note.CustomType != CustomTypeNote {
						t.Fatalf("%s: parent of %s is not a note entry", name, e.ID)
					}
					before := fx.replay(t, fx.pathTo(t, *note.ParentID))
					var data NoteData
					if err := json.Unmarshal(note.Data, &data); err != nil {
						t.Fatal(err)
					}
					var path, text string
					_ = json.Unmarshal(args["path"], &path)
					_ = json.Unmarshal(args["text"], &text)
					now := time.UnixMilli(data.Timestamp)
					var res WriteResult
					var entry AppendEntry
					var err error
					if action == "write_file" {
						res, entry, err = PlanWrite(before, "/root", WriteArgs{Path: path, Text: text}, now)
					} else {
						res, entry, err = PlanAppend(before, "/root", AppendArgs{Path: path, Text: text}, now)
					}
					if err != nil {
						t.Fatalf("%s: %v", e.ID, err)
					}
					wantEntry, _ := json.Marshal(map[string]any{"type": note.Type, "customType": note.CustomType, "data": json.RawMessage(note.Data)})
					assertSameJSON(t, "entry of "+e.ID, entry, wantEntry)
					got = res
				case "read_file":
					s := fx.replay(t, fx.pathTo(t, e.ID))
					var ra ReadFileArgs
					raw, _ := json.Marshal(args)
					if err := json.Unmarshal(raw, &ra); err != nil {
						t.Fatal(err)
					}
					res, err := ReadFile(s, "/root", ra)
					if err != nil {
						t.Fatal(err)
					}
					got = res
				default:
					t.Fatalf("%s: unexpected notes action %q", e.ID, action)
				}
				assertSameJSON(t, "details of "+e.ID, got, e.Message.Details)
				checked++
			}
			if checked == 0 {
				t.Fatal("no notes tool results found")
			}
			t.Logf("%d tool results checked", checked)
		})
	}
}

// Every window marker that carries a thread hint is re-rendered from the
// note state of its own branch and the recovery IDs it shows.
func TestFixtureThreadHints(t *testing.T) {
	total := 0
	for _, name := range fixtureNames {
		fx := loadFixture(t, name)
		for _, e := range fx.entries {
			if e.Type != "custom_message" || e.CustomType != CustomTypeWindowForTest {
				continue
			}
			var content string
			if err := json.Unmarshal(e.Content, &content); err != nil {
				continue
			}
			hint := hintOf(content)
			if hint == "" {
				continue
			}
			var rec *Recovery
			if i := strings.LastIndex(hint, "\n"+hintRecoveryPrefix); i >= 0 || strings.HasPrefix(hint, hintRecoveryPrefix) {
				line := hint[i+1:]
				rec = &Recovery{}
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, hintRecoveryPrefix)), rec); err != nil {
					t.Fatal(err)
				}
			}
			s := fx.replay(t, fx.pathTo(t, e.ID))
			if got := ThreadHint(s, rec); got != hint {
				t.Errorf("%s %s:\n got %q\nwant %q", name, e.ID, got, hint)
			}
			total++
		}
	}
	if total < 8 {
		t.Fatalf("only %d hints checked", total)
	}
	t.Logf("%d thread hints checked", total)
}

const CustomTypeWindowForTest = "codex-context-window"

// hintOf extracts the thread-hint lines of a window marker's content.
func hintOf(content string) string {
	i := strings.Index(content, "<context_window>\n")
	j := strings.Index(content, "\n</context_window>")
	if i < 0 || j < i {
		return ""
	}
	var keep []string
	for _, l := range strings.Split(content[i+len("<context_window>\n"):j], "\n") {
		switch {
		case strings.HasPrefix(l, "Agent name: "), strings.HasPrefix(l, "First context window id: "),
			strings.HasPrefix(l, "Current context window id: "), strings.HasPrefix(l, "Previous context window id: "):
		default:
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// toolArgs finds the arguments of the toolCall answered by result.
func (fx *fixture) toolArgs(t *testing.T, result *rawEntry) map[string]json.RawMessage {
	t.Helper()
	for _, id := range fx.pathTo(t, result.ID) {
		e := fx.byID[id]
		if e.Type != "message" || e.Message.Role != "assistant" {
			continue
		}
		var parts []struct {
			Type      string                     `json:"type"`
			ID        string                     `json:"id"`
			Arguments map[string]json.RawMessage `json:"arguments"`
		}
		if json.Unmarshal(e.Message.Content, &parts) != nil {
			continue
		}
		for _, p := range parts {
			if p.Type == "toolCall" && p.ID == result.Message.ToolCallID {
				return p.Arguments
			}
		}
	}
	t.Fatalf("%s: no toolCall for %s", fx.name, result.ID)
	return nil
}

func assertSameJSON(t *testing.T, what string, got any, want []byte) {
	t.Helper()
	gb, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	if err := json.Unmarshal(gb, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	gn, _ := json.Marshal(g)
	wn, _ := json.Marshal(w)
	if !bytes.Equal(gn, wn) {
		t.Errorf("%s:\n got %s\nwant %s", what, gn, wn)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
