// Package bubble runs a function in a testing/synctest bubble from any
// goroutine of any program: a test, a benchmark, a fuzz target, a helper
// that has no *testing.T, or a program that is not a test at all (a
// campaign CLI). Inside the bubble, time.Now, timers and time.Sleep read
// the bubble's fake clock, which starts at 2000-01-01T00:00:00Z and moves
// only when every goroutine of the bubble is durably blocked: the harness
// moves it with time.Sleep to follow a scenario's clock.
//
// # How
//
// synctest.Test needs a *testing.T. The package obtains one of its own,
// once per process, the first time Run is called: a "host" test that
// never ends, started by the testing package itself and parked on a
// goroutine of its own.
//
//   - In a test binary (testing.Testing), testing.RunTests runs the host
//     as a top-level test of a test tree of its own. While it starts, the
//     flags that would filter it or print it (-test.run, -test.skip,
//     -test.v, -test.failfast) are set to neutral values, and put back as
//     soon as the host runs; the GOMAXPROCS RunTests sets from -test.cpu
//     is put back too. So the host runs whatever -run says, and go test
//     -v and -json print nothing of it.
//   - In another program, testing.MainStart and M.Run run the host, the
//     test flags at their defaults. The program must have registered and
//     parsed the process's flags first (testing.Init, flag.Parse), as
//     rapid requires anyway; M.Run would otherwise parse the command line
//     itself.
//
// Each Run then calls synctest.Test with the host's T on a goroutine
// started outside every bubble (by internal/outside),
// so Run may be called from many goroutines at once, and even from inside
// a bubble of the caller's own.
//
// # Limits
//
//   - It relies on testing.RunTests and testing.MainStart, which the
//     testing package exports for go test's generated main and does not
//     hold to the Go 1 compatibility promise: a new Go release may change
//     them, and then this package, not its callers, needs the fix.
//   - A test binary must have started running its tests (M.Run parses the
//     flags and the -test.cpu list): Run from TestMain before m.Run, or
//     from an init function, reports the bubble unavailable. Toggling the
//     flags is not synchronised with a parallel test that calls
//     testing.Verbose at that very moment (-race would see it); it happens
//     once per process.
//   - Under -test.timeout, a test binary that times out lists the host
//     among the running tests.
//   - The bubble's own T is not the caller's: f gets no *testing.T, and
//     what it would log or fail is the host's, which never reports. A race
//     the race detector finds while a bubble runs fails the host; Run then
//     returns an error.
//   - f runs in the bubble, with every restriction of synctest: channels,
//     timers and WaitGroups made inside must not be used from outside, a
//     goroutine blocked on something outside the bubble (I/O, a mutex, a
//     channel made outside) stops the bubble's clock and keeps Run from
//     returning until it ends, and goroutines left blocked when f returns
//     make Run return a *Panic ("blocked goroutines remain").
//   - When no bubble can be had, Run returns an *Unavailable error and f
//     does not run: the caller decides what to do without one (the
//     consumer harness runs the scenario on the machine's clock and says
//     so in its report).
package bubble

import (
	"flag"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/idemcheck/idemcheck/internal/outside"
)

// HostName is the name of the host test.
const HostName = "IdemcheckBubbleHost"

// Unavailable is the error of a Run that could not make a bubble.
type Unavailable struct{ Reason string }

func (u *Unavailable) Error() string { return "no testing/synctest bubble: " + u.Reason }

// Panic is the error of a Run whose bubble panicked: f itself, or
// synctest when goroutines of the bubble were left blocked after f
// returned.
type Panic struct {
	Value any
	Stack string
}

func (p *Panic) Error() string { return fmt.Sprintf("panic in a synctest bubble: %v", p.Value) }

// Run runs f in a new bubble, on the bubble's root goroutine, and returns
// when f and every goroutine f started have ended. It returns an
// *Unavailable error (f did not run) when no bubble can be made in this
// process, a *Panic when f or the bubble panicked, or another error when
// the bubble's test failed (a race detected while it ran).
func Run(f func()) error {
	t, err := hostT()
	if err != nil {
		return err
	}
	var res error
	<-outside.Go(func() {
		returned := false
		defer func() {
			if !returned {
				if p := recover(); p != nil {
					res = &Panic{Value: p, Stack: string(debug.Stack())}
				} else if res == nil {
					res = fmt.Errorf("the bubble's test failed (was a race detected while it ran?)")
				}
			}
		}()
		synctest.Test(t, func(*testing.T) {
			defer func() {
				if p := recover(); p != nil {
					res = &Panic{Value: p, Stack: string(debug.Stack())}
				}
			}()
			f()
		})
		returned = true
	})
	return res
}

// Available reports whether Run can make bubbles in this process, starting
// the host if need be; otherwise it returns why not.
func Available() error {
	_, err := hostT()
	return err
}

var (
	hostMu  sync.Mutex
	host    *testing.T
	hostErr error
)

// hostT returns the host test's T, starting it on the first call.
func hostT() (*testing.T, error) {
	hostMu.Lock()
	defer hostMu.Unlock()
	if host != nil || hostErr != nil {
		return host, hostErr
	}
	if !flag.Parsed() {
		// Not remembered: a test binary's TestMain may call before m.Run.
		return nil, &Unavailable{Reason: "the process's flags are not parsed yet (a test binary before m.Run, or a program that has not called testing.Init and flag.Parse)"}
	}
	host, hostErr = startHost()
	return host, hostErr
}

// startHost starts the host test and waits until it runs or its runner
// gives up.
func startHost() (*testing.T, error) {
	var ready chan *testing.T
	outside.Do(func() { ready = make(chan *testing.T, 1) })
	procs := runtime.GOMAXPROCS(0)
	tests := []testing.InternalTest{{Name: HostName, F: func(t *testing.T) {
		// RunTests sets GOMAXPROCS from -test.cpu: put the caller's back.
		runtime.GOMAXPROCS(procs)
		ready <- t
		select {} // the host lives as long as the process
	}}}
	inTest := testing.Testing()
	var restore func()
	if inTest {
		restore = neutralFlags()
	}
	outside.Go(func() {
		if inTest {
			testing.RunTests(matchString, tests)
		} else {
			testing.MainStart(deps{}, tests, nil, nil, nil).Run()
		}
		ready <- nil // the host did not run, or it ended
	})
	t := <-ready
	if restore != nil {
		restore()
	}
	if t == nil {
		return nil, &Unavailable{Reason: "the testing package did not run the host test (in a test binary: is it before m.Run, or -test.failfast after a failure?)"}
	}
	return t, nil
}

// neutralFlags sets the test flags that would filter or print the host
// to neutral values, and returns what puts them back.
func neutralFlags() (restore func()) {
	neutral := []struct{ name, value string }{
		{"test.run", ""}, {"test.skip", ""}, {"test.v", "false"}, {"test.failfast", "false"},
	}
	var undo []func()
	for _, n := range neutral {
		f := flag.Lookup(n.name)
		if f == nil {
			continue
		}
		old := f.Value.String()
		if f.Value.Set(n.value) == nil {
			undo = append(undo, func() { _ = f.Value.Set(old) })
		}
	}
	return func() {
		for _, u := range undo {
			u()
		}
	}
}

// matchString is the matcher RunTests asks for -test.run patterns.
func matchString(pat, str string) (bool, error) { return regexp.MatchString(pat, str) }

// deps is what testing.MainStart needs to run tests in a program that is
// not a test binary: no profiles, no coverage, no fuzzing.
type deps struct{}

func (deps) ImportPath() string                        { return "" }
func (deps) ModulePath() string                        { return "" }
func (deps) MatchString(pat, str string) (bool, error) { return matchString(pat, str) }
func (deps) SetPanicOnExit0(bool)                      {}
func (deps) StartCPUProfile(io.Writer) error           { return errNoProfiles }
func (deps) StopCPUProfile()                           {}
func (deps) StartTestLog(io.Writer)                    {}
func (deps) StopTestLog() error                        { return nil }
func (deps) WriteProfileTo(string, io.Writer, int) error {
	return errNoProfiles
}
func (deps) CoordinateFuzzing(time.Duration, int64, time.Duration, int64, int, []corpusEntry, []reflect.Type, string, string) error {
	return errNoFuzzing
}
func (deps) RunFuzzWorker(func(corpusEntry) error) error { return errNoFuzzing }
func (deps) ReadCorpus(string, []reflect.Type) ([]corpusEntry, error) {
	return nil, errNoFuzzing
}
func (deps) CheckCorpus([]any, []reflect.Type) error { return errNoFuzzing }
func (deps) ResetCoverage()                          {}
func (deps) SnapshotCoverage()                       {}
func (deps) InitRuntimeCoverage() (string, func(string, string) (string, error), func() float64) {
	return "", nil, nil
}

// corpusEntry is the testing package's fuzz corpus entry, an alias of
// this struct type.
type corpusEntry = struct {
	Parent     string
	Path       string
	Data       []byte
	Values     []any
	Generation int
	IsSeed     bool
}

var (
	errNoProfiles = fmt.Errorf("bubble: the host test takes no profiles")
	errNoFuzzing  = fmt.Errorf("bubble: the host test does not fuzz")
)
