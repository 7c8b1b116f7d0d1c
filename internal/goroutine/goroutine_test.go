package goroutine

import (
	"sync"
	"testing"
)

func TestCurrentTellsRunningGoroutinesApart(t *testing.T) {
	const n = 64
	ids := make([]ID, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ids[i] = Current()
			// Still the same goroutine after its stack grew.
			if grow(200) != ids[i] {
				t.Errorf("goroutine %d changed its ID as its stack grew", i)
			}
		}()
	}
	// All n run at once (blocked on start), so none may share an ID.
	close(start)
	wg.Wait()
	seen := map[ID]bool{Current(): true}
	for i, id := range ids {
		if id == 0 || seen[id] {
			t.Fatalf("goroutine %d: ID %v is zero or shared", i, id)
		}
		seen[id] = true
	}
}

//go:noinline
func grow(n int) ID {
	var pad [128]byte
	if n == 0 {
		return Current()
	}
	return grow(n-1) + ID(pad[n%128])
}

func BenchmarkCurrent(b *testing.B) {
	for b.Loop() {
		_ = Current()
	}
}
