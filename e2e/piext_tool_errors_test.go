package e2e

import (
	"strings"
	"testing"
)

// TestPiExtensionToolArgumentError: the model calls `history read_item`
// without the window_id it requires, and `history search_contents`
// without a query. contextd refuses each with a 422 whose detail names the
// missing field (api/errors.go: the detail already says every field
// error); the tool error the model and the person get says it once, with
// no repeated list of the same field errors after it.
func TestPiExtensionToolArgumentError(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		r := newRig(t, v, "local", []step{
			tool("history", map[string]any{"action": "read_item", "item_id": "abc"}),
			tool("history", map[string]any{"action": "search_contents"}),
			{Text: "done"},
		})
		r.startContextd()
		if stdout, _ := r.printMode(t, v, "local", "look something up"); strings.TrimSpace(stdout) != "done" {
			t.Fatalf("stdout = %q", stdout)
		}
		reqs := r.requests()
		if len(reqs) != 3 {
			t.Fatalf("%d requests, want 3", len(reqs))
		}
		for i, want := range []string{
			"history read_item cannot use these arguments: expected required property window_id to be present; correct them and call history again",
			"history search_contents cannot use these arguments: expected required property query to be present; correct them and call history again",
		} {
			res := lastToolResult(t, reqs[i+1])
			if got := res.text(); got != want {
				t.Errorf("tool error %d = %q, want %q", i+1, got, want)
			}
		}
		checkPairing(t, reqs)
	})
}
