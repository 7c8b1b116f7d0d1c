//go:build !linux

package main

// memoryLimit is unknown off Linux: the collector keeps its defaults.
func memoryLimit() int64 { return 0 }
