package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"contextd/coordinator"
)

// TestPi16HistoryFollowsContext: for harness-v16-context-edits.jsonl, written by Pi 1.6.0's
// SessionManager with replaced and omitted entries, contextd's /branch, list_items, read_item
// and search_contents answer what Pi 1.6 sends the model (Pi's buildSessionProjection, through
// pi-parity.mjs), at the default leaf and at a leaf before the edits:
//
//   - /branch reports rules pi-1.6 and Pi's messages: entry ids, roles and edit ids in order;
//   - the window's items are Pi's user/assistant/toolResult/custom messages after the boundary,
//     in order (omitted entries, system messages and usage entries are no items), each reading
//     as Pi's content: the replacement text for a replaced entry;
//   - the secret the edits removed ("sk-SECRET-123", in the original user message, tool result
//     and assistant reply) is found by search_contents only at the leaf before the edits.
func TestPi16HistoryFollowsContext(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	GenSessionsOn(t, Pi16, dir)
	man := ReadGenManifest(t, dir)
	var mf GenManifestFile
	for _, f := range man.Files {
		if f.File == "harness-v16-context-edits.jsonl" {
			mf = f
		}
	}
	if mf.File == "" {
		t.Fatal("gen-sessions wrote no harness-v16-context-edits.jsonl")
	}
	file := filepath.Join(dir, mf.File)
	var windows []string
	if err := json.Unmarshal(mf.IDs["windowIds"], &windows); err != nil || len(windows) != 1 {
		t.Fatalf("windowIds %s: %v", mf.IDs["windowIds"], err)
	}
	window := windows[0]

	c := startContextd(t, dir)
	c.do(http.MethodPut, "/v1/sessions/"+mf.SessionID, map[string]any{"session_file": file, "mode": "local", "pi_version": "1.6.0"}, nil)
	ctx := func(leaf string) map[string]any {
		m := map[string]any{"session_id": mf.SessionID}
		if leaf != "" {
			m["leaf_id"] = leaf
		}
		return m
	}

	for _, leaf := range []string{"", mf.ID("beforeEdits")} {
		t.Run("leaf="+leaf, func(t *testing.T) {
			pi := PiParityOn(t, Pi16, leaf, file)[0]
			if pi.Error != "" {
				t.Fatal(pi.Error)
			}
			// /branch: Pi's messages, rules pi-1.6.
			var br coordinator.BranchAnswer
			c.do(http.MethodGet, "/v1/sessions/"+mf.SessionID+"/branch?leaf_id="+leaf, nil, &br)
			if br.Rules != "pi-1.6" || len(br.Context) != len(pi.Messages) {
				t.Fatalf("/branch rules %q, %d messages; Pi %d", br.Rules, len(br.Context), len(pi.Messages))
			}
			for i, m := range pi.Messages {
				if g := br.Context[i]; g.EntryID != m.EntryID || g.Role != m.Role || g.EditID != m.EditID {
					t.Errorf("/branch message %d: %+v, Pi %+v", i, g, m)
				}
			}

			// The items Pi's context implies: messages after the boundary, as history roles.
			type item struct{ ID, Role, Prefix string }
			var want []item
			after := false
			for _, m := range pi.Messages {
				if m.EntryID == mf.ID("boundary0") {
					after = true
					continue
				}
				role, ok := map[string]string{"user": "user", "assistant": "assistant", "toolResult": "tool", "custom": "developer"}[m.Role]
				if !after || !ok {
					continue
				}
				prefix := m.TextPrefix
				if m.ContentKind == "parts" && len(m.PartTypes) > 0 && m.PartTypes[0] != "text" {
					prefix = "" // the rendered item starts with another part
				}
				want = append(want, item{m.EntryID, role, prefix})
			}
			var li struct {
				Items []struct {
					ItemID           string `json:"item_id"`
					Role             string `json:"role"`
					TruncatedContent string `json:"truncated_content"`
				} `json:"items"`
			}
			c.do(http.MethodPost, "/alpha/history/v2/list_items", map[string]any{"window_id": window, "limit": 25, "context": ctx(leaf)}, &li)
			var got []item
			for _, it := range li.Items {
				got = append(got, item{it.ItemID, it.Role, it.TruncatedContent})
			}
			if len(got) != len(want) {
				t.Fatalf("list_items %v\nPi's context implies %v", got, want)
			}
			for i := range want {
				if got[i].ID != want[i].ID || got[i].Role != want[i].Role || !strings.HasPrefix(got[i].Prefix, want[i].Prefix) {
					t.Errorf("item %d: %+v, Pi %+v", i, got[i], want[i])
				}
			}

			search := func(q string) []string {
				var sr struct {
					Items []struct {
						ItemID string `json:"item_id"`
					} `json:"items"`
				}
				c.do(http.MethodPost, "/alpha/history/v2/search_contents", map[string]any{"query": q, "limit": 25, "context": ctx(leaf)}, &sr)
				var ids []string
				for _, it := range sr.Items {
					ids = append(ids, it.ItemID)
				}
				slices.Sort(ids)
				return ids
			}
			read := func(id string) string {
				var ri struct {
					Item *struct {
						Content string `json:"content"`
					} `json:"item"`
				}
				c.do(http.MethodPost, "/alpha/history/v2/read_item", map[string]any{"window_id": window, "item_id": id, "context": ctx(leaf)}, &ri)
				if ri.Item == nil {
					return "(no item)"
				}
				return ri.Item.Content
			}
			secret := []string{mf.ID("u1"), mf.ID("tr1"), mf.ID("a2")}
			slices.Sort(secret)
			if leaf == "" {
				if hits := search("sk-SECRET-123"); len(hits) != 0 {
					t.Errorf("search for the redacted secret found %v", hits)
				}
				if hits, want := search("redacted"), sortedIDs(mf.ID("tr1"), mf.ID("a2")); !slices.Equal(hits, want) {
					t.Errorf("search redacted: %v, want %v", hits, want)
				}
				// Exact replacement texts (Pi: string → one text block for a tool result; the
				// later of two edits of a2 wins).
				for id, text := range map[string]string{
					mf.ID("tr1"): "[config.toml: 2 lines, secret redacted]",
					mf.ID("a2"):  "The config sets a secret (redacted).",
				} {
					if got := read(id); got != text {
						t.Errorf("read_item %s = %q, want %q", id, got, text)
					}
				}
				// Omitted entries are no items of the window.
				for _, id := range []string{mf.ID("u1"), mf.ID("cm1"), mf.ID("aRetry")} {
					if got := read(id); got != "(no item)" {
						t.Errorf("read_item of omitted %s = %q", id, got)
					}
				}
			} else if hits := search("sk-SECRET-123"); !slices.Equal(hits, secret) {
				t.Errorf("before the edits, search for the secret: %v, want %v", hits, secret)
			}
		})
	}
}

func sortedIDs(ids ...string) []string {
	slices.Sort(ids)
	return ids
}
