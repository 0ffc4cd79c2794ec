package session

// Grow returns s with room for at least n more elements, as slices.Grow
// does, but a new array is made with make and s copied into it, not
// grown by append.
//
// Why: on the VM of docs/benchmarks.md the first touch of a page fresh
// from the OS costs about 13 µs. Growing by append touches every page of
// the new array in one run of the runtime's memclr, which cannot be
// preempted: slices.Grow of a 30 MB array held its goroutine for 100 ms
// (400 ms on a loaded machine). A garbage collection waiting meanwhile for
// that goroutine to reach a safe point kept its idle mark worker running
// the whole time (the 1 GiB "first answer: GC share" row, docs/benchmarks.md),
// and a stop-the-world waits for it too. make zeroes a large array in
// chunks it can be preempted between, or not at all when the pages are
// fresh, and they are then touched as they are written.
func Grow[S ~[]E, E any](s S, n int) S {
	if n < 0 {
		panic("session.Grow: negative n")
	}
	if cap(s)-len(s) >= n {
		return s
	}
	t := make(S, len(s), len(s)+n)
	copy(t, s)
	return t
}
