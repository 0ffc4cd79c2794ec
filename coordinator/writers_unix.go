//go:build unix

package coordinator

import (
	"errors"
	"syscall"
)

// pidAlive reports whether process pid exists (signal 0: nothing is sent;
// EPERM means it exists under another user).
func pidAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
