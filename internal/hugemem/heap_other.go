//go:build !linux

package hugemem

// AdviseHeap does nothing outside Linux (no transparent huge pages to ask
// for); it returns 0.
func AdviseHeap() int { return 0 }

// HeapAdvisor is a no-op outside Linux.
type HeapAdvisor struct{}

// Check does nothing outside Linux.
func (a *HeapAdvisor) Check() {}
