//go:build unix

package backend

import (
	"errors"
	"syscall"
)

// processAlive reports whether a process pid exists (signal 0 checks
// without signalling; EPERM: it exists, another user's).
func processAlive(pid int) bool {
	if pid <= 0 {
		return true
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
