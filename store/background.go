package store

import (
	"fmt"
	"runtime"
)

// Background work at a lower OS priority.
//
// Go's scheduler has no priorities, and the kernel sees a scan and a
// request as two threads of equal weight. On two CPUs, a search that
// reads every frame, the filter builder or a checkpoint kept a CPU while
// the thread serving a /context waited in the kernel's run queue behind
// it and the other processes (Pi, the bench's clients): in runs of the
// bench's "/context under 1-byte searches" row with the search's scan
// lowered to nice 10, the row's p99 fell from 6.4 to 5.0 ms (medians of
// eight runs on a shared 2-CPU VM), and a /context right after a cold
// index, while the filter builder runs, from 1.3 to 1.0 ms
// (docs/benchmarks.md). So that work runs on threads of its own at
// backgroundNice: a long-lived goroutine (the filter builder, the
// checkpointer) locks its thread and lowers it for good (lowerThisThread);
// a search that reads every frame runs its callback on a scan worker
// (runOnScanWorker).
//
// A thread's priority cannot be raised back without privileges, so a
// lowered thread never runs other goroutines: it stays locked to its
// goroutine and ends with it.
//
// Why nice 10 and not lower, or SCHED_IDLE: a goroutine on a lowered
// thread holds its P, and a stop-the-world of the GC waits until that
// thread runs again. On a machine saturated by other processes a thread
// of weight w waits about 1024/w of a base slice: SCHED_IDLE (weight 3)
// held a stop-the-world for 49 ms and a /context for 120 ms in a run with
// two CPU hogs and GOGC=10; nice 10 (weight 110) 23 and 54 ms; nice 0 8
// and 12 ms. nice 10 is the trade: most of the gain, a bounded cost when
// the machine is saturated and a GC falls during a 1-byte search.

// backgroundNice is the nice value of the threads of background work
// (setpriority(2); 0 is the default, 19 the lowest priority).
const backgroundNice = 10

// lowerThisThread locks the calling goroutine to its thread and lowers the
// thread to backgroundNice (Linux; elsewhere it only locks); who names
// the work. The goroutine must not unlock it: its thread ends with it.
func lowerThisThread(who string) {
	runtime.LockOSThread()
	lowerThreadPriority(backgroundNice)
	if onLowered != nil {
		onLowered(who)
	}
}

// onLowered, when set (tests), is called on each thread lowerThisThread
// lowered, with the work's name.
var onLowered func(who string)

// scanJobs hands the callbacks of searches that read every frame
// (ReadScan with everyFrame) to idle scan workers, goroutines on lowered
// threads. A callback that finds none idle starts one, so there are at
// most as many as such searches ever ran at once (each holds a scanCores
// token: max(1, GOMAXPROCS-1)).
var scanJobs = make(chan func())

// runOnScanWorker runs fn on a scan worker and returns its result; a
// panic in fn is raised again in the caller, with fn's stack in its value.
func runOnScanWorker(fn func() error) error {
	type result struct {
		err   error
		panic any
	}
	done := make(chan result, 1)
	job := func() {
		defer func() {
			if v := recover(); v != nil {
				buf := make([]byte, 64<<10)
				done <- result{panic: fmt.Sprintf("%v\n\non a scan worker:\n%s", v, buf[:runtime.Stack(buf, false)])}
			}
		}()
		done <- result{err: fn()}
	}
	select {
	case scanJobs <- job:
	default:
		go scanWorker(job)
	}
	r := <-done
	if r.panic != nil {
		panic(r.panic)
	}
	return r.err
}

// scanWorker lowers its thread, runs first, then every job handed to it.
func scanWorker(first func()) {
	lowerThisThread("scan worker")
	first()
	for job := range scanJobs {
		job()
	}
}
