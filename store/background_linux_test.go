package store

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestBackgroundWorkIsLowered: the callback of a ReadScan that reads
// every frame runs on a thread at backgroundNice (the caller's own thread
// otherwise, at its nice value), and a panic in it reaches the caller; an
// index's filter builder and checkpointer lower their threads to
// backgroundNice (background.go). Expected values: setpriority(2) cannot
// raise a thread above its process's priority without privilege, so a
// test process already at nice n > 10 sees n.
func TestBackgroundWorkIsLowered(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	base, err := threadNice()
	if err != nil {
		t.Fatal(err)
	}
	want := max(base, backgroundNice)

	var mu sync.Mutex
	lowered := map[string]int{}
	onLowered = func(who string) {
		n, err := threadNice()
		if err != nil {
			n = -100
		}
		mu.Lock()
		lowered[who] = n
		mu.Unlock()
	}
	t.Cleanup(func() { onLowered = nil }) // after the index's Close (cleanups run last first)
	s := syncedLocalBasic(t)

	ctx := context.Background()
	for _, every := range []bool{false, true} {
		got := -100
		if err := s.ReadScan(ctx, every, func(v *View) error {
			got, err = threadNice()
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if w := map[bool]int{false: base, true: want}[every]; got != w {
			t.Errorf("ReadScan(everyFrame=%v): callback at nice %d, want %d", every, got, w)
		}
	}
	func() {
		defer func() {
			v := recover()
			if msg, _ := v.(string); !strings.Contains(msg, "boom in a scan") {
				t.Errorf("panic in a scan worker reached the caller as %v, want it with its message", v)
			}
		}()
		_ = s.ReadScan(ctx, true, func(*View) error { panic("boom in a scan") })
		t.Error("ReadScan returned after its callback panicked")
	}()

	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		fb, okF := lowered["filter builder"]
		cp, okC := lowered["checkpointer"]
		mu.Unlock()
		if okF && okC {
			if fb != want || cp != want {
				t.Errorf("filter builder at nice %d, checkpointer at %d, want %d", fb, cp, want)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lowered threads: %v, want the filter builder's and the checkpointer's", lowered)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
