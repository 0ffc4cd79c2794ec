package store

import "golang.org/x/sys/unix"

// lowerThreadPriority sets the calling thread's nice value (Linux applies
// setpriority(PRIO_PROCESS, 0, …) to the calling thread only: man 2
// setpriority, "BUGS"). Lowering needs no privilege; a failure leaves the
// thread at its priority.
func lowerThreadPriority(nice int) {
	_ = unix.Setpriority(unix.PRIO_PROCESS, 0, nice)
}

// threadNice is the calling thread's nice value (tests).
func threadNice() (int, error) {
	// getpriority(2) returns 20 - nice for the raw system call.
	p, err := unix.Getpriority(unix.PRIO_PROCESS, 0)
	return 20 - p, err
}
