package session

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// memEntryAt is entry i of the tree TestTreeEntriesSurviveGC builds alone
// (chainEntryAt, with every parent present, of the trees that reuse): every
// string freshly allocated (nothing else refers to it once the tree has
// it), a Refs on every third entry and a Window on every fifth.
func memEntryAt(i int) Entry {
	e := Entry{Seq: i, Line: i + 2, Offset: int64(i) * 100, Length: 99,
		ID: fmt.Sprintf("id-%06d", i), Type: strings.Clone(TypeMessage), Role: strings.Clone(RoleAssistant), StopReason: fmt.Sprintf("stop-%d", i%3)}
	if i > 0 {
		e.ParentID = fmt.Sprintf("id-%06d", i-1)
	}
	if i%7 == 0 {
		e.ParentID = fmt.Sprintf("missing-%d", i) // a parent never added: its own copy
	}
	if i%3 == 0 {
		e.Type, e.Timestamp = strings.Clone(TypeBranchSummary), fmt.Sprintf("2026-12-01T00:00:%02d.000Z", i%60)
		e.SetRefs(EntryRefs{FromID: fmt.Sprintf("from-%d", i), Label: strings.Repeat("l", i%5)})
	}
	if i%5 == 0 {
		e.Type, e.CustomType = strings.Clone(TypeCustomMessage), fmt.Sprintf("custom-%d", i%4)
		e.Window = &WindowMarker{Kind: "window", CurrentWindowID: fmt.Sprintf("w-%d", i), WindowNumber: i}
	}
	if i == 11 {
		e.ID = strings.Repeat("long-id-", 2000) // longer than a string chunk's share
	}
	return e
}

// churn allocates and drops pointer-rich garbage and collects several
// times, so that memory the collector freed is reused and overwritten.
func churn() {
	for range 3 {
		var junk [][]string
		for j := range 2000 {
			junk = append(junk, []string{strings.Repeat("x", 64+j%200), fmt.Sprint(j)})
		}
		runtime.KeepAlive(junk)
		runtime.GC()
	}
}

// TestTreeEntriesSurviveGC: a tree keeps its entries in rows of its own
// (entrymem.go) and copies of their strings in its arena (arena.go). After
// the entries given to Add are dropped and the heap is collected and
// reused, every field of every entry still reads as added: for a tree
// built alone, for one that reuses another (the preview's) after that
// tree is dropped, and for one that reused another, then diverged and
// copied its prefix.
func TestTreeEntriesSurviveGC(t *testing.T) {
	const n = 3000
	h := Header{Version: 3, ID: "s"}
	check := func(name string, tr *Tree, k int, at func(i int) Entry) {
		t.Helper()
		if tr.Len() != k {
			t.Fatalf("%s: %d entries, want %d", name, tr.Len(), k)
		}
		for i := range k {
			if want := at(i); !tr.Entry(i).Same(&want) {
				t.Fatalf("%s: entry %d reads %+v, want %+v", name, i, tr.Entry(i), want)
			}
		}
		for _, i := range []int{0, 1, 11, k - 1} {
			if s, ok := tr.Lookup(at(i).ID); !ok || s != i {
				t.Errorf("%s: Lookup(entry %d) = %d %v", name, i, s, ok)
			}
		}
	}

	alone := NewTree(h)
	for i := range n {
		alone.Add(memEntryAt(i))
	}
	churn()
	check("alone", alone, n, memEntryAt)

	base := NewTree(h)
	for i := range n {
		base.Add(chainEntryAt(i))
	}
	reused := NewTree(h)
	reused.Reuse(base)
	if !reused.Reusing() {
		t.Fatal("Reuse did nothing")
	}
	for i := range n + 500 { // all of base, then 500 of its own
		reused.Add(chainEntryAt(i))
	}
	base = nil
	churn()
	check("reused", reused, n+500, chainEntryAt)

	other := func(i int) Entry {
		e := chainEntryAt(i)
		if i >= n/2 {
			e.ID = fmt.Sprintf("other-%06d", i)
			e.ParentID = ""
		}
		return e
	}
	base = NewTree(h)
	for i := range n {
		base.Add(chainEntryAt(i))
	}
	diverged := NewTree(h)
	diverged.Reuse(base)
	for i := range n {
		diverged.Add(other(i))
	}
	if diverged.Reusing() {
		t.Fatal("still reusing after a different entry")
	}
	base = nil
	churn()
	check("diverged", diverged, n, other)
}

// fillEntry sets every field of e (a reflect.Value of an Entry, or of a
// struct an Entry points at) to a value of its own, derived from tag:
// strings "tag-Name", numbers and kinds tag+i+1, flags true, pointers to
// structs filled the same way. Only the field named only, when not "",
// is set.
func fillEntry(t *testing.T, v reflect.Value, tag int, only string) {
	t.Helper()
	for i := range v.NumField() {
		f, name := v.Field(i), v.Type().Field(i).Name
		if only != "" && name != only {
			continue
		}
		switch f.Kind() {
		case reflect.String:
			f.SetString(fmt.Sprintf("%d-%s", tag, name))
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(tag + i + 1))
		case reflect.Uint8:
			f.SetUint(uint64((tag+i)%2 + 1)) // an EditKind: EditOmit or EditReplace
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Pointer:
			p := reflect.New(f.Type().Elem())
			fillEntry(t, p.Elem(), tag+100, "")
			f.Set(p)
		default:
			t.Fatalf("Entry.%s: a field of kind %s, which this test does not know how to fill: teach fillEntry", name, f.Kind())
		}
	}
}

// TestEntryFieldsRoundTrip: every field of Entry (and of what it points
// at) that Tree.Add is given reads back from Tree.Entry unchanged, set
// alone and all together. It fails for a field added to Entry but not to
// entryRow, entryTable.add and entryTable.entry (entrymem.go). Seq is the
// entry's index, so the entries are added at Seq 0 and 1.
func TestEntryFieldsRoundTrip(t *testing.T) {
	fields := reflect.TypeFor[Entry]()
	for i := range fields.NumField() {
		name := fields.Field(i).Name
		if name == "Seq" {
			continue
		}
		for _, only := range []string{name, ""} {
			tr := NewTree(Header{Version: 3, ID: "s"})
			var want [2]Entry
			for seq := range want {
				fillEntry(t, reflect.ValueOf(&want[seq]).Elem(), 10*seq, only)
				want[seq].Seq = seq
				if want[seq].ID == "" {
					want[seq].ID = fmt.Sprint("id", seq) // ids are unique in a tree
				}
				tr.Add(want[seq])
			}
			for seq := range want {
				if got := tr.Entry(seq); !reflect.DeepEqual(got, want[seq]) {
					t.Errorf("with %q set, entry %d reads back\n%+v, want\n%+v", only, seq, got, want[seq])
				}
			}
		}
	}
}
