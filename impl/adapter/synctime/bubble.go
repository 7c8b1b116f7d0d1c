package synctime

import (
	"context"
	"fmt"
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
//
// A run that leaves nothing costs nothing more than the bubble: the bubble
// counts its own goroutines, and only a run that left some reads the
// goroutine profile for their number and stack. That profile lists every
// goroutine of the process, those earlier runs left parked included, so
// reading it after every run made a long hunt quadratic.
func Test(t *testing.T, f func(t *testing.T)) (leak *Leak, err error) {
	id, left, err := run(t, f)
	if err != nil || !left {
		return nil, err
	}
	n, stack := leaked(id)
	if n == 0 {
		// Left, but none carries the bubble's label: a goroutine a timer
		// of the bubble started (time.AfterFunc) inherits the labels of
		// the goroutine that runs the bubble's timers instead.
		n, stack = 1, "(no stack: the goroutine left carries no label of the run, as one started by time.AfterFunc does)"
	}
	return &Leak{Goroutines: n, Stack: stack}, nil
}

// TestTolerant is Test for a run whose leftover goroutines are tolerated
// (Library.Lingering): it reports whether f left any, without reading
// their stacks. Each run of such a library leaves its goroutines parked
// for the rest of the process, so a profile read after every run would
// cost more with every run.
func TestTolerant(t *testing.T, f func(t *testing.T)) (left bool, err error) {
	_, left, err = run(t, f)
	return left, err
}

// run runs f in a bubble of its own, its goroutines labelled with the
// bubble's id, and reports whether goroutines it started were left once f
// and its cleanups returned. synctest knows that exactly and at no cost:
// it ends a bubble that still has goroutines with a panic, which run
// turns into left.
func run(t *testing.T, f func(t *testing.T)) (id string, left bool, err error) {
	id = strconv.FormatInt(bubbleSeq.Add(1), 10)
	defer func() {
		p := recover()
		if p == nil {
			return
		}
		msg := fmt.Sprint(p)
		switch {
		case strings.Contains(msg, "blocked goroutines remain"):
			// f and its cleanups returned; goroutines it started did not.
			left = true
		case strings.HasPrefix(msg, "deadlock:"):
			err = fmt.Errorf("synctime: every goroutine of the run's bubble is blocked for ever (%s): the store waits on something nothing will release", msg)
		default:
			panic(p)
		}
	}()
	synctest.Test(t, func(t *testing.T) {
		// Every goroutine f starts inherits the label, so that a leak's
		// goroutines can be told from the rest of the process's.
		pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels(bubbleLabel, id)))
		f(t)
	})
	return id, false, nil
}

// bubbleLabel is the pprof label every goroutine of one Test inherits.
const bubbleLabel = "idemcheck-bubble"

var bubbleSeq atomic.Int64

// profiles counts the goroutine profiles read, for the tests to hold that
// a run that leaves nothing reads none.
var profiles atomic.Int64

// leaked counts the goroutines still labelled with bubble id and returns
// the stack of the first.
func leaked(id string) (int, string) {
	profiles.Add(1)
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
