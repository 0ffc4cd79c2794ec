package coordinator

import "sync/atomic"

// arrayTail is the claim on the spare capacity of one backing array, held
// by every slice of that array the Service's memo hands out (memo.go):
// filled is how many of the array's elements are written. A slice s of
// the array may be extended in place only while len(s) == filled, which
// the extension claims (compare-and-set); so no element any slice holds
// is ever written again, however often a memo entry holding s is evicted
// and derived again. The claim lives with the array, not with a memo
// entry: a payload holding s carries the same claim, never a fresh one.
type arrayTail struct{ filled atomic.Int64 }

// appendOwned returns s followed by v, and the tail of the result's array.
// s is shared and read-only up to its length; tail (nil: none, nothing
// may be written past s) is the claim on its array. The first extension
// of the array's filled length writes in place; any other, or a full
// array, copies into a new array with room to grow (and a new tail), so
// that a chain of appends, one entry at a time, costs no copy of the whole
// list each.
func appendOwned[T any](s []T, tail *arrayTail, v ...T) ([]T, *arrayTail) {
	n := len(s)
	if tail != nil && cap(s)-n >= len(v) && tail.filled.CompareAndSwap(int64(n), int64(n+len(v))) {
		return append(s, v...), tail
	}
	out := make([]T, n, n+len(v)+n/4+64)
	copy(out, s)
	out = append(out, v...)
	t := new(arrayTail)
	t.filled.Store(int64(len(out)))
	return out, t
}
