//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package machineclock

import (
	"syscall"
	"time"
)

// now asks the kernel for the time: a synctest bubble fakes the runtime's
// clock, not the system call.
func now() time.Time {
	var tv syscall.Timeval
	if err := syscall.Gettimeofday(&tv); err != nil {
		return time.Now()
	}
	return time.Unix(tv.Unix())
}
