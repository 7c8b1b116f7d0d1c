package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// memoryLimit is three quarters of the machine's memory (0: unknown).
func memoryLimit() int64 {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil || si.Totalram == 0 {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit) / 4 * 3
}

// residentBytes is the memory the process holds in RAM (its resident set,
// /proc/self/statm), what a memory budget is held to; the Go runtime's
// figure when that cannot be read. It counts what the Go heap does not:
// an embedded database's own allocations, say.
func residentBytes() int64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err == nil {
		if f := strings.Fields(string(data)); len(f) >= 2 {
			if pages, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				return pages * int64(os.Getpagesize())
			}
		}
	}
	return runtimeBytes()
}
