package history

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"contextd/session"
)

// oldLocalWindows is the earlier LocalWindows (one append per item), the
// oracle for the one-array builder.
func oldLocalWindows(t *session.Tree, branch []int, ref RefFunc) []Window {
	var out []Window
	for _, s := range branch {
		e := new(t.Entry(s))
		if e.IsBoundary() {
			out = append(out, Window{ID: e.Window.CurrentWindowID})
			continue
		}
		if len(out) == 0 {
			continue
		}
		w := &out[len(out)-1]
		if r, ok := ref(s, w.ID); ok {
			w.Items = append(w.Items, r)
		}
	}
	return out
}

// randomTree is a linear tree of n entries: boundaries (some of another
// kind, which open nothing), items and non-items.
func randomTree(r *rand.Rand, n int) (*session.Tree, RefFunc) {
	tr := session.NewTree(session.Header{ID: "s"})
	item := map[int]bool{}
	parent := ""
	for i := 0; i < n; i++ {
		e := session.Entry{Seq: i, ID: fmt.Sprintf("%08x", i), ParentID: parent, Type: session.TypeMessage, Role: session.RoleUser}
		switch k := r.IntN(20); {
		case k == 0:
			e.Type, e.CustomType = session.TypeCustomMessage, session.CustomTypeWindow
			e.Window = &session.WindowMarker{Kind: "window", CurrentWindowID: fmt.Sprintf("w%d", i%7)}
		case k == 1:
			e.Type, e.CustomType = session.TypeCustomMessage, session.CustomTypeWindow
			e.Window = &session.WindowMarker{Kind: "reminder", CurrentWindowID: "r"}
		case k < 5:
			// not an item
		default:
			item[i] = true
		}
		tr.Add(e)
		parent = e.ID
	}
	ref := func(seq int, windowID string) (ItemRef, bool) {
		if !item[seq] {
			return ItemRef{}, false
		}
		return ItemRef{WindowID: windowID, ItemID: tr.ID(seq), Role: RoleUser, Chars: seq, Key: int64(seq), Summary: seq%11 == 0}, true
	}
	return tr, ref
}

// TestExtendLocalWindows: LocalWindows equals the earlier builder, and
// extending the windows of any prefix of a branch by the rest gives the
// windows of the whole branch without changing the prefix's windows, also
// when extended twice from the same prefix (as concurrent requests do).
func TestExtendLocalWindows(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 5, 30, 200, 1000} {
		tr, ref := randomTree(r, n)
		branch, _, err := tr.Branch("")
		if err != nil {
			t.Fatal(err)
		}
		want := oldLocalWindows(tr, branch, ref)
		if got := materialize(LocalWindows(tr, branch, ref)); !reflect.DeepEqual(got, want) {
			t.Fatalf("n %d: LocalWindows differs from the earlier builder:\n%v\n%v", n, got, want)
		}
		for cut := 0; cut <= len(branch); cut += max(1, len(branch)/150) {
			// The base is itself extended (its last window's items may have
			// spare capacity).
			base := ExtendLocalWindows(LocalWindows(tr, branch[:cut/2], ref), tr, branch[cut/2:cut], ref)
			before := materialize(base)
			got := ExtendLocalWindows(base, tr, branch[cut:], ref)
			if !reflect.DeepEqual(materialize(got), want) {
				t.Fatalf("n %d, cut %d: extended windows differ", n, cut)
			}
			// Another extension of the same base, with other items (as a
			// concurrent request for another leaf would build) leaves the
			// first answer alone.
			ExtendLocalWindows(base, tr, branch[cut:], func(seq int, windowID string) (ItemRef, bool) {
				r, ok := ref(seq, windowID)
				r.ItemID = "other"
				return r, ok
			})
			if !reflect.DeepEqual(materialize(got), want) {
				t.Fatalf("n %d, cut %d: a second extension changed the first", n, cut)
			}
			again := ExtendLocalWindows(base, tr, branch[cut:], ref)
			if !reflect.DeepEqual(materialize(again), want) || !reflect.DeepEqual(materialize(base), before) {
				t.Fatalf("n %d, cut %d: extending changed the base or the earlier answer", n, cut)
			}
			// Growing one answer never writes into another.
			if len(got) > 0 {
				last := &got[len(got)-1]
				last.packed = append(last.packed, packedItem{kind: extraItem})
				if !reflect.DeepEqual(materialize(again), want) || !reflect.DeepEqual(materialize(base), before) {
					t.Fatalf("n %d, cut %d: appending to one answer changed another", n, cut)
				}
			}
		}
	}
}

// materialize returns ws as windows that hold their items whole (Items;
// nil for none), as oldLocalWindows builds them.
func materialize(ws []Window) []Window {
	var out []Window
	for i := range ws {
		w := Window{ID: ws[i].ID}
		if ws[i].Len() > 0 {
			w.Items = slices.Clone(ws[i].All())
		}
		out = append(out, w)
	}
	return out
}

// listRefs returns the refs of l ([] for none).
func listRefs(l ItemList) []ItemRef {
	out := []ItemRef{}
	for i := 0; i < l.Len(); i++ {
		out = append(out, l.At(i))
		if l.Key(i) != out[i].Key {
			panic("ItemList.Key differs from At(i).Key")
		}
	}
	return out
}

// TestSearchCandidates: the candidates Search hands to the TextSource are
// the earlier ones: SearchOrder's summaries then raw items, each group
// reversed with recent_first, then filtered.
func TestSearchCandidates(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 200; i++ {
		v := &View{}
		for w := 0; w < r.IntN(6); w++ {
			win := Window{ID: fmt.Sprintf("w%d", r.IntN(3))}
			for j := 0; j < r.IntN(8); j++ {
				win.Items = append(win.Items, ItemRef{WindowID: win.ID, ItemID: fmt.Sprintf("%d.%d", w, j),
					Role: []string{RoleUser, RoleAssistant, RoleTool}[r.IntN(3)], ToolName: []string{"", "read"}[r.IntN(2)],
					Summary: r.IntN(4) == 0})
			}
			v.Windows = append(v.Windows, win)
		}
		for _, f := range []filter{{}, {windowID: "w1"}, {role: RoleTool}, {toolName: "read"}, {windowID: "w9"}} {
			for _, recent := range []bool{false, true} {
				summaries, raw := splitOrder(v)
				if recent {
					slices.Reverse(summaries)
					slices.Reverse(raw)
				}
				want := []ItemRef{}
				for _, r := range append(summaries, raw...) {
					if f.match(&r) {
						want = append(want, r)
					}
				}
				if got := listRefs(v.searchCandidates(f, recent)); !slices.Equal(got, want) {
					t.Fatalf("filter %+v recent %v:\n got %v\nwant %v", f, recent, got, want)
				}
			}
		}
	}
}

// TestSearchOrdered: a view with Ordered = SearchOrder answers every
// search as the same view without it.
func TestSearchOrdered(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	words := []string{"alpha", "beta", "gamma"}
	for i := 0; i < 100; i++ {
		texts := MemTexts{}
		v := &View{Texts: texts}
		key := int64(0)
		for w := 0; w < r.IntN(5); w++ {
			win := Window{ID: fmt.Sprintf("w%d", r.IntN(3))}
			for j := 0; j < r.IntN(8); j++ {
				key++
				texts[key] = words[r.IntN(3)] + " " + words[r.IntN(3)]
				win.Items = append(win.Items, ItemRef{WindowID: win.ID, ItemID: fmt.Sprint(key), Key: key,
					Role: []string{RoleUser, RoleTool}[r.IntN(2)], ToolName: []string{"", "read"}[r.IntN(2)], Summary: r.IntN(5) == 0})
			}
			v.Windows = append(v.Windows, win)
		}
		o := *v
		o.Ordered = SearchOrder(v)
		for _, a := range []SearchArgs{{Query: "alpha"}, {Query: "beta", Limit: ip(25)}, {Query: "a", RecentFirst: bp(true)},
			{Query: "gamma", WindowID: sp("w1")}, {Query: "alpha", Role: sp(RoleTool)}, {Query: "zzz"}} {
			want, err1 := v.Search(a)
			got, err2 := o.Search(a)
			if err1 != nil || err2 != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("search %+v: with Ordered %v %v, without %v %v", a, got, err2, want, err1)
			}
			if !a.Unfiltered() != (a.RecentFirst != nil || a.WindowID != nil || a.Role != nil) {
				t.Fatalf("Unfiltered(%+v) = %v", a, a.Unfiltered())
			}
		}
	}
}

// TestSearchOrderAdjacent: SearchOrder of Local windows built from scratch
// is the array that holds their items (no copy: its first element is the
// first window's), of windows extended after a prefix a copy, and of
// windows with summaries the summaries first; in every case the items of
// the windows in order, summaries first (docs/codex-contract.md "Local history").
func TestSearchOrderAdjacent(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	flat := func(ws []Window) []ItemRef {
		var s, o []ItemRef
		for _, w := range ws {
			for _, it := range w.All() {
				if it.Summary {
					s = append(s, it)
				} else {
					o = append(o, it)
				}
			}
		}
		return append(s, o...)
	}
	shared := 0
	for _, n := range []int{0, 1, 5, 30, 200, 1000} {
		tr, ref := randomTree(r, n)
		branch, _, err := tr.Branch("")
		if err != nil {
			t.Fatal(err)
		}
		// Local items are never summaries (randomTree marks some).
		local := func(seq int, windowID string) (ItemRef, bool) {
			r, ok := ref(seq, windowID)
			r.Summary = false
			return r, ok
		}
		if got, want := listRefs(SearchOrder(&View{Windows: LocalWindows(tr, branch, ref)})), flat(LocalWindows(tr, branch, ref)); !reflect.DeepEqual(got, want) && len(want) > 0 {
			t.Fatalf("n %d: SearchOrder of windows with summaries differs from their items, summaries first", n)
		}
		wins := LocalWindows(tr, branch, local)
		order := SearchOrder(&View{Windows: wins})
		if want := flat(wins); !reflect.DeepEqual(listRefs(order), want) && len(want) > 0 {
			t.Fatalf("n %d: SearchOrder of LocalWindows differs from the windows' items", n)
		}
		if order.Len() > 0 {
			pl := order.(*packedList)
			got := pl.head
			if len(pl.tail) != 0 {
				t.Fatalf("n %d: SearchOrder of LocalWindows has a tail of %d items, want all in its head", n, len(pl.tail))
			}
			first := 0
			for wins[first].Len() == 0 {
				first++
			}
			if &got[0] != &wins[first].packed[0] || cap(got) != len(got) {
				t.Fatalf("n %d: SearchOrder of LocalWindows copied the items (or left room to append)", n)
			}
			shared++
		}
		cut := len(branch) / 2
		ext := ExtendLocalWindows(LocalWindows(tr, branch[:cut], local), tr, branch[cut:], local)
		if got, want := listRefs(SearchOrder(&View{Windows: ext})), flat(ext); !reflect.DeepEqual(got, want) && len(want) > 0 {
			t.Fatalf("n %d: SearchOrder of extended windows differs from their items", n)
		}
		if len(wins) > 1 && wins[0].Len() > 0 {
			sum := slices.Clone(wins)
			sum[1] = Window{ID: sum[1].ID, Items: slices.Clone(sum[1].All())}
			if len(sum[1].Items) > 0 {
				sum[1].Items[0].Summary = true
			}
			if got, want := listRefs(SearchOrder(&View{Windows: sum})), flat(sum); !reflect.DeepEqual(got, want) {
				t.Fatalf("n %d: SearchOrder with a summary differs: %v, want %v", n, got, want)
			}
		}
	}
	if shared == 0 {
		t.Fatal("no tree had items: the test checked nothing")
	}
}

// TestLocalWindowsPackedRefs: a window of LocalWindows gives back through
// At exactly the refs its RefFunc returned, also those that do not fit
// the packed form (another ItemID or WindowID than the entry's and
// window's, a Key or Chars outside int32, a negative one), which are kept
// whole; the packed form is 20 bytes. Through an extension too.
func TestLocalWindowsPackedRefs(t *testing.T) {
	if got := reflect.TypeFor[packedItem]().Size(); got != 20 {
		t.Fatalf("packedItem is %d bytes, want 20", got)
	}
	tr, base := randomTree(rand.New(rand.NewPCG(9, 10)), 400)
	odd := func(seq int, windowID string) (ItemRef, bool) {
		r, ok := base(seq, windowID)
		r.Summary = false
		switch seq % 9 {
		case 1:
			r.ItemID = "renamed-" + r.ItemID
		case 2:
			r.Key = 1 << 40
		case 3:
			r.Chars = -1
		case 4:
			r.WindowID = "elsewhere"
		case 5:
			r.Key = -7
		case 6:
			r.Chars = 1 << 33
		case 7:
			r.ToolName, r.ToolNamespace, r.BashExecution, r.Role = "read", "fs", true, RoleTool
		}
		return r, ok
	}
	branch, _, err := tr.Branch("")
	if err != nil {
		t.Fatal(err)
	}
	want := oldLocalWindows(tr, branch, odd)
	extras := 0
	for cut := 0; cut <= len(branch); cut += 37 {
		for name, got := range map[string][]Window{
			"fresh":    LocalWindows(tr, branch, odd),
			"extended": ExtendLocalWindows(LocalWindows(tr, branch[:cut], odd), tr, branch[cut:], odd),
		} {
			if !reflect.DeepEqual(materialize(got), want) {
				t.Fatalf("cut %d, %s: windows differ from their refs", cut, name)
			}
			for i := range got {
				for j := range got[i].packed {
					if got[i].packed[j].kind&extraItem != 0 {
						extras++
					}
				}
			}
			if o := SearchOrder(&View{Windows: got}); !reflect.DeepEqual(Collect(o), flatItems(want)) {
				t.Fatalf("cut %d, %s: SearchOrder differs", cut, name)
			}
		}
	}
	if extras == 0 {
		t.Fatal("no ref was kept whole: the test checked nothing")
	}
}

// flatItems is the items of ws in order (none is a summary here).
func flatItems(ws []Window) []ItemRef {
	var out []ItemRef
	for _, w := range ws {
		out = append(out, w.Items...)
	}
	return out
}

// TestExtends: Extends(a, b) is true exactly when b's keys begin with all
// of a's (the definition, checked key by key here), for the search orders
// of a branch's windows and of extensions of them by one entry, by two,
// and by the second without the first (lists that part where an item was
// skipped); and the order of a branch one entry longer shares the head of
// the shorter one's, so the comparison reads only the tails.
func TestExtends(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 8))
	keys := func(l ItemList) []int64 {
		var out []int64
		for i := range l.Len() {
			out = append(out, l.Key(i))
		}
		return out
	}
	want := func(a, b ItemList) bool {
		ka, kb := keys(a), keys(b)
		return len(kb) >= len(ka) && slices.Equal(ka, kb[:len(ka)])
	}
	checked, shared, differ := 0, 0, 0
	for _, n := range []int{2, 5, 30, 200, 1000} {
		tr, ref := randomTree(r, n)
		branch, _, err := tr.Branch("")
		if err != nil {
			t.Fatal(err)
		}
		local := func(seq int, windowID string) (ItemRef, bool) {
			r, ok := ref(seq, windowID)
			r.Summary = false
			return r, ok
		}
		for _, cut := range []int{0, 1, len(branch) / 3, len(branch) / 2, len(branch) - 2} {
			if cut < 0 || cut+2 > len(branch) {
				continue
			}
			base := LocalWindows(tr, branch[:cut], local)
			lists := []ItemList{
				SearchOrder(&View{Windows: base}),
				SearchOrder(&View{Windows: ExtendLocalWindows(base, tr, branch[cut:cut+1], local)}),
				SearchOrder(&View{Windows: ExtendLocalWindows(base, tr, branch[cut:cut+2], local)}),
				SearchOrder(&View{Windows: ExtendLocalWindows(base, tr, branch[cut+1:cut+2], local)}),
				RefList(listRefs(SearchOrder(&View{Windows: LocalWindows(tr, branch[:cut+2], local)}))),
			}
			for _, a := range lists {
				for _, b := range lists {
					if got := Extends(a, b); got != want(a, b) {
						t.Fatalf("n %d, cut %d: Extends(%v, %v) = %v, want %v", n, cut, keys(a), keys(b), got, !got)
					} else if !got {
						differ++
					}
					checked++
				}
			}
			one, ok1 := lists[1].(*packedList)
			two, ok2 := lists[2].(*packedList)
			if ok1 && ok2 && len(one.head) > 0 && len(one.head) == len(two.head) && &one.head[0] == &two.head[0] {
				shared++
			}
		}
	}
	if shared == 0 || differ == 0 {
		t.Fatalf("of %d pairs, %d differed and %d extensions shared a head: the shortcut or the refusal went untested", checked, differ, shared)
	}
}
