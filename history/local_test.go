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
		e := &t.Entries[s]
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
		return ItemRef{WindowID: windowID, ItemID: tr.Entries[seq].ID, Role: RoleUser, Chars: seq, Key: int64(seq), Summary: seq%11 == 0}, true
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
		if got := LocalWindows(tr, branch, ref); !reflect.DeepEqual(got, want) {
			t.Fatalf("n %d: LocalWindows differs from the earlier builder:\n%v\n%v", n, got, want)
		}
		for cut := 0; cut <= len(branch); cut += max(1, len(branch)/150) {
			// The base is itself extended (its last window's items may have
			// spare capacity).
			base := ExtendLocalWindows(LocalWindows(tr, branch[:cut/2], ref), tr, branch[cut/2:cut], ref)
			before := deepCopy(base)
			got := ExtendLocalWindows(base, tr, branch[cut:], ref)
			if !reflect.DeepEqual(got, want) {
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
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("n %d, cut %d: a second extension changed the first", n, cut)
			}
			again := ExtendLocalWindows(base, tr, branch[cut:], ref)
			if !reflect.DeepEqual(again, want) || !reflect.DeepEqual(base, before) {
				t.Fatalf("n %d, cut %d: extending changed the base or the earlier answer", n, cut)
			}
			// Growing one answer never writes into another.
			if len(got) > 0 {
				last := &got[len(got)-1]
				last.Items = append(last.Items, ItemRef{ItemID: "extra"})
				if !reflect.DeepEqual(again, want) || !reflect.DeepEqual(base, before) {
					t.Fatalf("n %d, cut %d: appending to one answer changed another", n, cut)
				}
			}
		}
	}
}

func deepCopy(ws []Window) []Window {
	out := slices.Clone(ws)
	for i := range out {
		out[i].Items = slices.Clone(out[i].Items)
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
				if got := v.searchCandidates(f, recent); !slices.Equal(got, want) {
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
// the windows in order, summaries first (reference §3.3).
func TestSearchOrderAdjacent(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	flat := func(ws []Window) []ItemRef {
		var s, o []ItemRef
		for _, w := range ws {
			for _, it := range w.Items {
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
		if got, want := SearchOrder(&View{Windows: LocalWindows(tr, branch, ref)}), flat(LocalWindows(tr, branch, ref)); !reflect.DeepEqual(got, want) && len(want) > 0 {
			t.Fatalf("n %d: SearchOrder of windows with summaries differs from their items, summaries first", n)
		}
		wins := LocalWindows(tr, branch, local)
		got := SearchOrder(&View{Windows: wins})
		if want := flat(wins); !reflect.DeepEqual(got, want) && len(want) > 0 {
			t.Fatalf("n %d: SearchOrder of LocalWindows differs from the windows' items", n)
		}
		if len(got) > 0 {
			first := 0
			for len(wins[first].Items) == 0 {
				first++
			}
			if &got[0] != &wins[first].Items[0] || cap(got) != len(got) {
				t.Fatalf("n %d: SearchOrder of LocalWindows copied the items (or left room to append)", n)
			}
			shared++
		}
		cut := len(branch) / 2
		ext := ExtendLocalWindows(LocalWindows(tr, branch[:cut], local), tr, branch[cut:], local)
		if got, want := SearchOrder(&View{Windows: ext}), flat(ext); !reflect.DeepEqual(got, want) && len(want) > 0 {
			t.Fatalf("n %d: SearchOrder of extended windows differs from their items", n)
		}
		if len(wins) > 1 && len(wins[0].Items) > 0 {
			sum := slices.Clone(wins)
			sum[1].Items = slices.Clone(sum[1].Items)
			if len(sum[1].Items) > 0 {
				sum[1].Items[0].Summary = true
			}
			if got, want := SearchOrder(&View{Windows: sum}), flat(sum); !reflect.DeepEqual(got, want) {
				t.Fatalf("n %d: SearchOrder with a summary differs: %v, want %v", n, got, want)
			}
		}
	}
	if shared == 0 {
		t.Fatal("no tree had items: the test checked nothing")
	}
}
