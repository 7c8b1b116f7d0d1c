package synctime

import (
	"context"
	"fmt"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// Library is a store library that reads time.Now, described once for every
// check (system.WithTimeNowStore, storetest.Run,
// linearizability.CheckStore), as store.Conventions is.
type Library struct {
	// Open builds a fresh store of the library. It runs inside the run's
	// bubble, so the timers and goroutines it starts are the bubble's.
	Open func() (store.Store, error)
	// Lingering, when not empty, says why the library leaves goroutines
	// running after its store is done with (an expiry ticker started for
	// the life of the process, with no way to stop it): the checks then
	// tolerate them and log the reason. Empty, such goroutines are
	// reported as a leak. A store that stops its goroutines in Close
	// (store.Closer) leaves none: the checks close every store they open.
	Lingering string
}

// Validate reports a Library the checks cannot use.
func (l Library) Validate() error {
	if l.Open == nil {
		return fmt.Errorf("synctime: Library.Open is nil")
	}
	return nil
}

// Store is the constructor of the library's stores for the harness: Store
// over Open.
func (l Library) Store() func(clock.Source) (store.Store, error) { return Store(l.Open) }

// ConcurrentStore is Store for a run whose goroutines move one harness
// clock and call the store at once (a linearizability recording): the
// bubble's clock may then run a little ahead of the harness's, and the
// store reads its own clock moving forward, never backwards.
func (l Library) ConcurrentStore() func(clock.Source) (store.Store, error) {
	return func(src clock.Source) (store.Store, error) { return newSynced(src, l.Open, true) }
}

// Leak is what a bubble left running: goroutines started in it that were
// still there once its function and cleanups had returned.
type Leak struct {
	// Goroutines is how many were left.
	Goroutines int
	// Stack is the stack of the first, as the goroutine profile shows it.
	Stack string
}

func (l *Leak) Error() string {
	return fmt.Sprintf("%d goroutine(s) started during the run were still running after it ended, its store closed (a ticker or worker the library never stops):\n%s", l.Goroutines, l.Stack)
}

// Test runs f in a testing/synctest bubble of its own, as synctest.Test
// does, and returns the goroutines f started that are still running once f
// and its cleanups returned (nil if none). synctest.Test would panic on
// them ("blocked goroutines remain"); here they are left parked in the
// finished bubble, whose clock has stopped, and reported instead. A bubble
// in which every goroutine blocks for ever (a store that waits on itself)
// is reported as an error too, not a panic. f may not call t.Run.
func Test(t *testing.T, f func(t *testing.T)) (leak *Leak, err error) {
	id := strconv.FormatInt(bubbleSeq.Add(1), 10)
	defer func() {
		p := recover()
		if p == nil {
			return
		}
		msg := fmt.Sprint(p)
		switch {
		case leak != nil && strings.Contains(msg, "blocked goroutines remain"):
			// The leak found below: the bubble could not end cleanly.
		case strings.HasPrefix(msg, "deadlock:"):
			err = fmt.Errorf("synctime: every goroutine of the run's bubble is blocked for ever (%s): the store waits on something nothing will release", msg)
		default:
			panic(p)
		}
	}()
	synctest.Test(t, func(t *testing.T) {
		// Registered first, so it runs after every cleanup f registers
		// (a store's Close among them).
		t.Cleanup(func() {
			pprof.SetGoroutineLabels(context.Background()) // this goroutine is not a leak
			synctest.Wait()                                // what is left now blocks for good, or is gone
			if n, stack := leaked(id); n > 0 {
				leak = &Leak{Goroutines: n, Stack: stack}
			}
		})
		pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels(bubbleLabel, id)))
		f(t)
	})
	return leak, nil
}

// bubbleLabel is the pprof label every goroutine of one Test inherits.
const bubbleLabel = "idemcheck-bubble"

var bubbleSeq atomic.Int64

// leaked counts the goroutines still labelled with bubble id and returns
// the stack of the first.
func leaked(id string) (int, string) {
	if runtime.NumGoroutine() <= 1 {
		return 0, ""
	}
	var b strings.Builder
	if err := pprof.Lookup("goroutine").WriteTo(&b, 1); err != nil {
		return 0, ""
	}
	want := fmt.Sprintf("%q:%q", bubbleLabel, id)
	n, first := 0, ""
	for _, entry := range strings.Split(b.String(), "\n\n") {
		if !strings.Contains(entry, want) {
			continue
		}
		count := 1
		if c, _, ok := strings.Cut(entry, " @ "); ok {
			if k, err := strconv.Atoi(strings.TrimSpace(c)); err == nil {
				count = k
			}
		}
		n += count
		if first == "" {
			first = strings.TrimSpace(entry)
		}
	}
	return n, first
}
