//go:build unix

package leases

import (
	"errors"
	"syscall"
)

// ProcessAlive reports whether a process with pid runs on this host: a
// signal 0 reaches it (or it exists but belongs to another user).
func ProcessAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
