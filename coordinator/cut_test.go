package coordinator_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"contextd"
)

// TestWindowCutTreeBasic: the identifiers of window 0 of tree-basic (the
// window its one rollover archived). The expected list was checked with
// an independent Python reading of the JSONL: for each value, the entries
// of the archived interval (b3504875..42a59a75) whose text, thinking or
// tool-call arguments contain it, and whether the note snapshot, the next
// boundary 4a454560 or the summary bae0cbce contain it (all agreed).
func TestWindowCutTreeBasic(t *testing.T) {
	ts := openFixture(t, "tree-basic", "tree")
	c, err := ts.svc.WindowCutOf(t.Context(), ts.id, "93e1557d-7342-47d3-970c-2383fd5384d7", "")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"path internal/ledger/currency_test.go [e95efcf4] ",
		"path pkg/money/batch.go [e95efcf4 61c3ee4a 6ccbe428 39526386 e4121df0 a09187eb f94c9a14] notes,summary",
		"quantity 0 files [de548b5f] ",
		"path internal/store/postgres/currency_test.go [81b9b6e8] ",
		"path internal/ledger/transfer.go [81b9b6e8] ",
		"path cmd/ledgerd/journal.go [81b9b6e8 a09187eb] ",
		"path internal/store/postgres/refund_test.go [81b9b6e8] ",
		"path internal/api/httpapi/refund_test.go [81b9b6e8 ae2a5952] summary",
		"path internal/ledger/currency.go [2a08bf82] summary",
		"path pkg/money/entry.go [2a08bf82] ",
		"path internal/store/postgres/batch.go [f3e3d5d9] summary",
		"path internal/recon/refund.go [f3e3d5d9] ",
		"quantity 1 files [e4121df0] ",
		"path internal/store/postgres/ledger.go [0b5b214f] summary",
		"quantity 0.469s [2200de22] ",
		"quantity 0.938s [2200de22] ",
		"quantity 3.603s [2200de22] ",
		"quantity 0.943s [2200de22] ",
	}
	var got, names []string
	for _, id := range c.Identifiers {
		if id.Carried != (len(id.CarriedIn) > 0) {
			t.Errorf("%s: carried %v, carried_in %v", id.Value, id.Carried, id.CarriedIn)
		}
		if id.Kind == "name" {
			names = append(names, id.Value)
			continue
		}
		got = append(got, fmt.Sprintf("%s %s %v %s", id.Kind, id.Value, id.ItemIDs, strings.Join(id.CarriedIn, ",")))
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("identifiers (-want +got):\n%s", d)
	}
	if len(names) != 33 || !cmp.Equal(names[:4], []string{"TransferService", "ErrPartialPosting", "ReconcileTransfer", "IndexCurrency"}) {
		t.Errorf("names = %d %q", len(names), names)
	}
	if c.NextWindowID != "2d620c43-63c5-433c-9d31-9c51c7ca0e17" || c.Items != 32 || c.Carried != 5 || c.Dropped != 46 {
		t.Errorf("cut = next %s, %d items, %d carried, %d dropped", c.NextWindowID, c.Items, c.Carried, c.Dropped)
	}
	// The current window was not cut.
	_, err = ts.svc.WindowCutOf(t.Context(), ts.id, "2d620c43-63c5-433c-9d31-9c51c7ca0e17", "")
	if contextd.ErrorCode(err) != contextd.EConflict {
		t.Errorf("current window: %v, want a conflict", err)
	}
}

// TestRecoverabilityFixtures: every dropped identifier of every archived
// window of the Pi-written fixtures is found by search_contents (first
// page, window_id = the window) and returned by read_item: 100%. The
// dropped counts pin the extraction.
func TestRecoverabilityFixtures(t *testing.T) {
	for _, c := range []struct {
		name, mode string
		dropped    []int
	}{
		{"local-basic", "local", []int{1433, 63}},
		{"tree-basic", "tree", []int{46}},
		{"tree-multi", "tree", []int{42, 33, 67, 40}},
		{"tree-manual-summary", "tree", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			ts := openFixture(t, c.name, c.mode)
			r, err := ts.svc.RecoverabilityOf(t.Context(), ts.id, "")
			if err != nil {
				t.Fatal(err)
			}
			var dropped []int
			for _, w := range r.Windows {
				dropped = append(dropped, w.Dropped)
				if w.Recovered != w.Dropped || w.Share == nil || *w.Share != 1 || len(w.Misses) != 0 {
					t.Errorf("window %s: %d of %d recovered, misses %+v", w.WindowID, w.Recovered, w.Dropped, w.Misses)
				}
			}
			if c.dropped != nil && !cmp.Equal(dropped, c.dropped) {
				t.Errorf("dropped per window = %v, want %v", dropped, c.dropped)
			}
			if r.Share == nil || *r.Share != 1 || r.Recovered != r.Dropped {
				t.Errorf("overall %d of %d", r.Recovered, r.Dropped)
			}
		})
	}
}
