package api

import (
	"encoding/json"
	"testing"
)

// TestWithArrays: every nil slice or map reachable through encoded fields
// is written as [] or {}, through pointers, interfaces, slices, maps and
// embedded structs; omitempty fields stay omitted, []byte, json.RawMessage
// and json.Marshaler values keep their own encoding, and the value passed
// in is not modified.
func TestWithArrays(t *testing.T) {
	type Inner struct {
		Names []string `json:"names"`
	}
	type Embedded struct {
		Tags []string `json:"tags"`
	}
	type Outer struct {
		Embedded
		Items   []Inner          `json:"items"`
		Ptr     *Inner           `json:"ptr"`
		NilPtr  *Inner           `json:"nil_ptr"`
		Any     any              `json:"any"`
		Map     map[string]Inner `json:"map"`
		NilMap  map[string]int   `json:"nil_map"`
		Omitted []string         `json:"omitted,omitempty"`
		Bytes   []byte           `json:"bytes"`
		Raw     json.RawMessage  `json:"raw"`
		Skipped []string         `json:"-"`
		Count   int              `json:"count"`
	}
	in := Outer{
		Items: []Inner{{}, {Names: []string{"a"}}},
		Ptr:   &Inner{},
		Any:   []int(nil),
		Map:   map[string]Inner{"k": {}},
	}
	got, err := json.Marshal(withArrays(in))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"tags":[],"items":[{"names":[]},{"names":["a"]}],"ptr":{"names":[]},"nil_ptr":null,"any":[],"map":{"k":{"names":[]}},"nil_map":{},"bytes":null,"raw":null,"count":0}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if in.Items[0].Names != nil || in.Ptr.Names != nil || in.Map["k"].Names != nil || in.Tags != nil {
		t.Errorf("the input was modified: %+v", in)
	}
	// A value without nil slices is returned as it is.
	full := &Inner{Names: []string{"x"}}
	if withArrays(full).(*Inner) != full {
		t.Error("a value without nil slices was copied")
	}
	// Types that cannot hold a nil slice pass through.
	if withArrays(3) != 3 || withArrays(nil) != nil {
		t.Error("scalars changed")
	}
	// A recursive type terminates.
	type Node struct {
		Kids []*Node `json:"kids"`
	}
	b, _ := json.Marshal(withArrays(Node{Kids: []*Node{{}}}))
	if string(b) != `{"kids":[{"kids":[]}]}` {
		t.Errorf("recursive: %s", b)
	}
}
