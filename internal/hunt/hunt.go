// Package hunt is the one hunting core of idemcheck: what the property
// hunts (package properties) and the consumer hunts (package consumertest)
// share.
//
// rapid reads its settings (-rapid.checks, -rapid.seed, -rapid.shrinktime,
// -rapid.v, ...) from process-wide flags, at the start of a check and
// while it runs. A hunt that sets them for itself and a check that runs
// meanwhile would race on them. Every rapid check in the repository goes
// through this package: WithFlags sets the flags for one hunt while no
// other check runs, and Check runs a check with the flags as they are,
// alongside other such checks but never while a hunt has them set.
//
// It also holds Recorder, the rapid.TB that records a failure instead of
// failing a test, so that a failure is a result, and Breach, a law broken.
package hunt

import (
	"sync"
	"testing"

	"pgregory.net/rapid"
)

// flagsMu is the one guard of rapid's process-wide flags: WithFlags holds
// it to write them, Check to read them.
var flagsMu sync.RWMutex

// WithFlags sets rapid's named flags to values (names as on the command
// line, "rapid.checks"), runs f and puts the old values back. No other
// WithFlags or Check runs meanwhile. f must not call WithFlags or Check.
func WithFlags(values map[string]string, f func()) {
	flagsMu.Lock()
	defer flagsMu.Unlock()
	restore := setFlags(values)
	defer restore()
	f()
}

// Check runs rapid.Check(t, prop) with rapid's flags as they are (the
// command line's): other Checks may run meanwhile, a WithFlags may not.
// prop must not call WithFlags or Check.
func Check(t rapid.TB, prop func(*rapid.T)) {
	flagsMu.RLock()
	defer flagsMu.RUnlock()
	rapid.Check(t, prop)
}

// CheckWithFlags runs rapid.Check(t, prop) under rapid's flags set to
// values, as WithFlags does.
func CheckWithFlags(t rapid.TB, values map[string]string, prop func(*rapid.T)) {
	WithFlags(values, func() { rapid.Check(t, prop) })
}

// MakeCheck is rapid.MakeCheck under the guard, as Check.
func MakeCheck(prop func(*rapid.T)) func(*testing.T) {
	check := rapid.MakeCheck(prop)
	return func(t *testing.T) {
		t.Helper()
		flagsMu.RLock()
		defer flagsMu.RUnlock()
		check(t)
	}
}

// MakeFuzz is rapid.MakeFuzz under the guard, as Check.
func MakeFuzz(prop func(*rapid.T)) func(*testing.T, []byte) {
	fuzz := rapid.MakeFuzz(prop)
	return func(t *testing.T, input []byte) {
		t.Helper()
		flagsMu.RLock()
		defer flagsMu.RUnlock()
		fuzz(t, input)
	}
}
