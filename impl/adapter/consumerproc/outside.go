package consumerproc

import "sync"

// A delivery may run inside a testing/synctest bubble (consumertest.Check
// plays each scenario in one, so that the handler's clock is the
// scenario's). The process's machinery must not: a goroutine waiting on a
// pipe is never "durably blocked", so a bubble holding the reader of an
// idle process could never move its clock, and a timeout measured on the
// bubble's clock would never expire while the process hangs. So the
// process is started, read, timed (its watchdog) and killed by goroutines
// started from one goroutine that lives outside every bubble, reached
// through channels made outside every bubble (at package initialisation);
// the caller of a round trip only writes the line and waits on channels
// made outside (lineproc.Exchange), and pooled processes outlive the
// bubble of the scenario that started them.

var (
	outsideMu  sync.Mutex
	outsideIn  = make(chan func())
	outsideOut = make(chan struct{})
)

func init() {
	go func() {
		for f := range outsideIn {
			f()
			outsideOut <- struct{}{}
		}
	}()
}

// outside runs f on the goroutine outside every bubble and waits for it.
// f must be quick: it starts goroutines, it does not wait for them.
func outside(f func()) {
	outsideMu.Lock()
	defer outsideMu.Unlock()
	outsideIn <- f
	<-outsideOut
}

// goOutside runs f on a new goroutine outside every bubble and returns a
// channel, made outside too, that is closed when f returns.
func goOutside(f func()) <-chan struct{} {
	var done chan struct{}
	outside(func() {
		done = make(chan struct{})
		go func() {
			defer close(done)
			f()
		}()
	})
	return done
}
