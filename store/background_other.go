//go:build !linux

package store

import "errors"

// lowerThreadPriority does nothing outside Linux: there
// setpriority(PRIO_PROCESS, 0, …) would lower the whole process.
func lowerThreadPriority(int) {}

// threadNice is not known outside Linux (tests).
func threadNice() (int, error) { return 0, errors.New("thread priority: Linux only") }
