package main

import "syscall"

// memoryLimit is three quarters of the machine's memory (0: unknown).
func memoryLimit() int64 {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil || si.Totalram == 0 {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit) / 4 * 3
}
