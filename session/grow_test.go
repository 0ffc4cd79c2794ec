package session

import (
	"slices"
	"testing"
)

// TestGrow: Grow keeps the length and elements, leaves room for n more,
// and returns s itself when it has the room already.
func TestGrow(t *testing.T) {
	s := make([]int, 3, 5)
	copy(s, []int{7, 8, 9})
	if g := Grow(s, 2); &g[0] != &s[0] || len(g) != 3 || cap(g) != 5 {
		t.Fatalf("Grow with room: new array or length %d cap %d, want s itself", len(g), cap(g))
	}
	g := Grow(s, 10)
	if !slices.Equal(g, []int{7, 8, 9}) || cap(g) < 13 || &g[0] == &s[0] {
		t.Fatalf("Grow(s, 10) = %v cap %d, want [7 8 9] in a new array of cap >= 13", g, cap(g))
	}
	if g := Grow([]int(nil), 4); len(g) != 0 || cap(g) < 4 {
		t.Fatalf("Grow(nil, 4): len %d cap %d, want 0 and >= 4", len(g), cap(g))
	}
}
