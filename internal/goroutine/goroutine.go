// Package goroutine tells goroutines apart: Current returns a value that
// names the calling goroutine for as long as it runs. The consumer harness
// needs it at every database call, to know whether the call comes from the
// worker's own handler or from a goroutine a library started (a clean-up
// ticker, a goroutine the handler left behind), and runtime.Stack, the
// portable way to read a goroutine's id, costs microseconds per call on the
// deep stacks of a database driver.
//
// On amd64 and arm64, Current is the address of the runtime's descriptor
// of the goroutine, read from where the Go ABI keeps it (thread-local
// storage on amd64, register g on arm64): two goroutines running at once
// never share it, though an ended goroutine's descriptor may be reused by
// a later one. Elsewhere it is the goroutine's id, read from
// runtime.Stack. Either way, compare values only while both goroutines
// are known to run.
package goroutine

// ID names a running goroutine.
type ID uintptr

// Current returns the calling goroutine's ID.
func Current() ID { return current() }
