package consumerharness

// stackHint is the size of the frame growStack makes: enough that the
// runtime gives the goroutine a 16 KB stack at once, which a worker's
// calls into the embedded SQLite engine, and a run's scheduling, fit in.
const stackHint = 8 << 10

// growStack grows the calling goroutine's stack in one step, while it
// holds few frames. A goroutine starts with a 2 KB stack; growing it by
// doubling as the engine's calls deepen copies the stack, and adjusts
// every frame's pointers, three times over, and each schedule's run and
// workers are new goroutines. i must be 0: it keeps the frame from being
// optimised away.
//
//go:noinline
func growStack(i int) byte {
	var frame [stackHint]byte
	frame[i] = 1
	return frame[stackHint-1-i]
}
