//go:build !linux

package main

// memoryLimit is unknown off Linux: the collector keeps its defaults.
func memoryLimit() int64 { return 0 }

// residentBytes is the memory the Go runtime holds from the system, off
// Linux: the process's resident set is not read there.
func residentBytes() int64 { return runtimeBytes() }
