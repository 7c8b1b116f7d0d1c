// Package outside runs functions on goroutines that live outside every
// testing/synctest bubble, for code that may be called from inside one.
// A goroutine belongs to the bubble of the goroutine that starts it, and
// a channel to the bubble it is made in; so a goroutine that must outlive
// a bubble (a pooled process's reader, the host of the bubbles
// themselves), or whose waiting must not count as the bubble's (a pipe's
// reader is never durably blocked), is started here, by one goroutine
// started at package initialisation, with its channels made there too.
package outside

import "sync"

var (
	mu  sync.Mutex
	in  = make(chan func())
	out = make(chan struct{})
)

func init() {
	go func() {
		for f := range in {
			f()
			out <- struct{}{}
		}
	}()
}

// Do runs f on the goroutine outside every bubble and waits for it. f
// must be quick: it starts goroutines and makes channels, it does not
// wait for them (every caller of Do waits for it).
func Do(f func()) {
	mu.Lock()
	defer mu.Unlock()
	in <- f
	<-out
}

// Go runs f on a new goroutine outside every bubble and returns a
// channel, made outside too, that is closed when f returns.
func Go(f func()) <-chan struct{} {
	var done chan struct{}
	Do(func() {
		done = make(chan struct{})
		go func() {
			defer close(done)
			f()
		}()
	})
	return done
}
