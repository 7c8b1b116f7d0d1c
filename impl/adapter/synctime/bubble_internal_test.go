package synctime

import (
	"strings"
	"testing"
	"time"
)

// A run that leaves nothing reads no goroutine profile, however many runs
// came before it or goroutines the process holds: its cost does not grow
// with them. A run that leaves a goroutine reads one, and reports it with
// its stack; a tolerated one reads none.
func TestOnlyALeakReadsTheProfile(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	for range 100 {
		go func() { <-release }() // the rest of a busy process
	}
	before := profiles.Load()
	for range 50 {
		leak, err := Test(t, func(t *testing.T) {
			done := make(chan struct{})
			go func() {
				time.Sleep(time.Second)
				close(done)
			}()
			<-done
		})
		if err != nil || leak != nil {
			t.Fatalf("leak %v, error %v", leak, err)
		}
	}
	if n := profiles.Load() - before; n != 0 {
		t.Fatalf("50 runs that left nothing read the goroutine profile %d times, want 0", n)
	}

	left, err := TestTolerant(t, func(t *testing.T) { go func() { <-make(chan struct{}) }() })
	if err != nil || !left {
		t.Fatalf("a tolerated run that left a goroutine: left %v, error %v", left, err)
	}
	if n := profiles.Load() - before; n != 0 {
		t.Fatalf("a tolerated leak read the goroutine profile %d times, want 0", n)
	}

	leak, err := Test(t, func(t *testing.T) { go parkForEver() })
	if err != nil || leak == nil || leak.Goroutines != 1 || !strings.Contains(leak.Stack, "parkForEver") {
		t.Fatalf("leak %+v, error %v: want one goroutine with its stack", leak, err)
	}
	if n := profiles.Load() - before; n != 1 {
		t.Fatalf("one leak read the goroutine profile %d times, want 1", n)
	}
}

// parkForEver blocks for the rest of the process, as a library's
// goroutine that nothing stops does.
func parkForEver() { <-make(chan struct{}) }
