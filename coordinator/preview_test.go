package coordinator

import (
	"reflect"
	"testing"

	"contextd/history"
	"contextd/store"
)

// TestBranchFromTreePreview: a cold GET /branch answered from the store's
// tree preview (every file takes that path here) equals the answer of a
// fully indexed session, and a history read right after it waits for the
// items: it equals the one-phase answer too.
func TestBranchFromTreePreview(t *testing.T) {
	old := store.PreviewMinBytes
	store.PreviewMinBytes = 0
	t.Cleanup(func() { store.PreviewMinBytes = old })
	const sid = "019f3776-3d33-70c6-baa2-5155ff71613c" // local-basic.jsonl's header id
	files := map[string][]byte{"s.jsonl": readFixture(t, "local-basic.jsonl")}
	ctx := t.Context()
	limit := 25
	cc := CallContext{SessionID: sid}

	// One phase: a history read indexes the file whole first.
	one, _ := localService(t, files)
	wantItems, err := one.ListItems(ctx, cc, history.ListItemsArgs{Limit: &limit})
	if err != nil {
		t.Fatal(err)
	}
	want, err := one.BranchOf(ctx, sid, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(want.EntryIDs) < 10 || len(wantItems.Items) == 0 {
		t.Fatalf("fixture too small: %d branch ids, %d items", len(want.EntryIDs), len(wantItems.Items))
	}

	two, _ := localService(t, files)
	got, err := two.BranchOf(ctx, sid, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("cold /branch from the tree preview:\n%+v\nwant (one phase):\n%+v", got, want)
	}
	gotItems, err := two.ListItems(ctx, cc, history.ListItemsArgs{Limit: &limit})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotItems, wantItems) {
		t.Errorf("list_items after the tree preview:\n%+v\nwant (one phase):\n%+v", gotItems, wantItems)
	}
}
