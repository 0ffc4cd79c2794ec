package session

import (
	"fmt"
	"reflect"
	"testing"
)

// reuseEntries is a chain of n message entries e0 <- e1 <- ... (ids
// "e<seq>"), with a branch summary at seq 3 pointing back at e1.
func reuseEntries(n int) []Entry {
	out := make([]Entry, n)
	for i := range out {
		e := Entry{Seq: i, Line: i + 2, Offset: int64(100 * (i + 1)), Length: 99, ID: fmt.Sprintf("e%d", i), Type: TypeMessage, Role: RoleUser}
		if i > 0 {
			e.ParentID = out[i-1].ID
		}
		if i == 3 {
			e.Type, e.Role, e.Timestamp = TypeBranchSummary, "", "t3"
			e.SetRefs(EntryRefs{FromID: "e1"})
		}
		out[i] = e
	}
	return out
}

func treeOf(h Header, es []Entry) *Tree {
	t := NewTree(h)
	for _, e := range es {
		t.Add(e)
	}
	return t
}

// TestTreeReuse: a tree fed the same entries as the tree it reuses shares
// its arrays (one copy of the entries in memory) and answers Lookup,
// Branch and Len at every length exactly as a tree built alone; an id of
// base past the prefix is not found. Once all of base is taken, new
// entries go on in t alone: base's answers do not change.
func TestTreeReuse(t *testing.T) {
	h := Header{Version: 3, ID: "s1"}
	es := reuseEntries(8)
	base := treeOf(h, es)
	tr := NewTree(h)
	tr.Reuse(base)
	if !tr.Reusing() {
		t.Fatal("Reuse of a tree with the same header did nothing")
	}
	for i, e := range es {
		tr.Add(e)
		alone := treeOf(h, es[:i+1])
		if !tr.SharesEntries(base) {
			t.Fatalf("after %d entries the tree no longer shares base's entries", i+1)
		}
		if tr.Len() != i+1 {
			t.Fatalf("Len = %d, want %d", tr.Len(), i+1)
		}
		for _, id := range []string{"e0", "e3", fmt.Sprintf("e%d", i), fmt.Sprintf("e%d", i+1), "e7"} {
			g, gok := tr.Lookup(id)
			w, wok := alone.Lookup(id)
			if g != w || gok != wok {
				t.Errorf("after %d entries Lookup(%s) = %d %v, want %d %v", i+1, id, g, gok, w, wok)
			}
		}
		gb, _, _ := tr.Branch("")
		wb, _, _ := alone.Branch("")
		if !reflect.DeepEqual(gb, wb) {
			t.Errorf("after %d entries Branch = %v, want %v", i+1, gb, wb)
		}
	}
	if tr.Reusing() {
		t.Error("still reusing after taking all of base")
	}
	// Past base: t alone.
	tr.Add(Entry{Seq: 8, Line: 10, Offset: 900, Length: 99, ID: "e8", ParentID: "e7", Type: TypeMessage, Role: RoleUser})
	if _, ok := base.Lookup("e8"); ok || base.Len() != 8 {
		t.Errorf("base sees e8 (len %d)", base.Len())
	}
	if s, ok := tr.Lookup("e8"); !ok || s != 8 {
		t.Errorf("Lookup(e8) = %d %v, want 8 true", s, ok)
	}
	if b, _, _ := tr.Branch(""); len(b) != 9 || b[8] != 8 {
		t.Errorf("Branch = %v, want e0..e8", b)
	}
	if b, _, _ := base.Branch(""); len(b) != 8 {
		t.Errorf("base Branch = %v, want e0..e7", b)
	}
}

// TestTreeReuseDiverges: an entry that differs from base's (the file was
// rewritten between the two reads) makes the tree copy its prefix and go
// on alone: it then equals a tree built alone from what it was fed, and
// base is unchanged.
func TestTreeReuseDiverges(t *testing.T) {
	h := Header{Version: 3, ID: "s1"}
	es := reuseEntries(8)
	base := treeOf(h, es)
	fed := reuseEntries(8)
	fed[5].ID = "x5"
	fed[6].ParentID = "x5"
	tr := NewTree(h)
	tr.Reuse(base)
	for _, e := range fed {
		tr.Add(e)
	}
	if tr.Reusing() || tr.SharesEntries(base) {
		t.Fatal("the tree still shares base after a different entry")
	}
	alone := treeOf(h, fed)
	if !reflect.DeepEqual(tr.Entries(), alone.Entries()) {
		t.Errorf("entries differ from a tree built alone")
	}
	for _, id := range []string{"e4", "e5", "x5", "e7"} {
		g, gok := tr.Lookup(id)
		w, wok := alone.Lookup(id)
		if g != w || gok != wok {
			t.Errorf("Lookup(%s) = %d %v, want %d %v", id, g, gok, w, wok)
		}
	}
	if s, ok := base.Lookup("e5"); !ok || s != 5 || base.ID(5) != "e5" {
		t.Errorf("base changed: Lookup(e5) = %d %v", s, ok)
	}
	// Reuse does nothing for another header or a base with a repeated id.
	other := NewTree(Header{Version: 3, ID: "s2"})
	other.Reuse(base)
	dup := treeOf(h, append(reuseEntries(3), Entry{Seq: 3, ID: "e0", Type: TypeMessage}))
	again := NewTree(h)
	again.Reuse(dup)
	if other.Reusing() || again.Reusing() {
		t.Errorf("Reuse with another header (%v) or a repeated id (%v)", other.Reusing(), again.Reusing())
	}
}

// TestEntrySame: Same tells apart two entries that differ in any one
// field (so a field added to Entry must be added to Same).
func TestEntrySame(t *testing.T) {
	base := Entry{Refs: &EntryRefs{}, Window: &WindowMarker{}}
	rt := reflect.TypeFor[Entry]()
	for i := range rt.NumField() {
		a, b := base, base
		a.Refs, b.Refs = &EntryRefs{}, &EntryRefs{}
		a.Window, b.Window = &WindowMarker{}, &WindowMarker{}
		if !a.Same(&b) {
			t.Fatal("equal entries reported different")
		}
		f := reflect.ValueOf(&b).Elem().Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("x")
		case reflect.Int, reflect.Int64:
			f.SetInt(1)
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Uint8:
			f.SetUint(1)
		case reflect.Pointer:
			switch p := f.Interface().(type) {
			case *EntryRefs:
				p.Label = "x"
			case *WindowMarker:
				p.WindowNumber = 1
			}
		default:
			t.Fatalf("field %s of kind %s: extend this test", rt.Field(i).Name, f.Kind())
		}
		if a.Same(&b) {
			t.Errorf("entries differing in %s reported equal", rt.Field(i).Name)
		}
	}
	var n Entry
	if n.Same(&base) {
		t.Error("nil Refs and Window reported equal to empty ones")
	}
}
