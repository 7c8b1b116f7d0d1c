package linearizability

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/idemcheck/idemcheck/impl/contract/store"

	"github.com/idemcheck/idemcheck/internal/machineclock"
)

// Verdict is the outcome of a check. There are three, and they are never
// merged: Unknown means the checker ran out of time, not that it found
// nothing.
type Verdict string

const (
	// Linearizable: every key's history has a linearization.
	Linearizable Verdict = "linearizable"
	// Violation: some key's history has none.
	Violation Verdict = "violation"
	// Unknown: the timeout struck before every key was decided, and no key
	// decided so far had a violation.
	Unknown Verdict = "unknown"
)

// maxShown bounds the violating keys explained and visualized: the first few
// are enough to act on, and a page of thousands of operations is not.
const maxShown = 4

// Result is the outcome of Check.
type Result struct {
	Verdict Verdict
	// Ops and Keys are the size of the checked history.
	Ops, Keys int
	// Violating are keys whose history is not linearizable, sorted. The
	// check stops at the first violations, so there may be more.
	Violating []store.Key
	// Undecided are the keys the timeout left unchecked or half checked.
	Undecided []store.Key
	// Explanations say, for each of the first violating keys, how far a
	// linearization got and which operations cannot come next.
	Explanations []string
	// Timeout is the budget the check had; Elapsed what it took.
	Timeout, Elapsed time.Duration
	viz              *visualization
}

// Pass reports whether the store was shown linearizable. It is false for
// Unknown: a check that timed out has proven nothing.
func (r Result) Pass() bool { return r.Verdict == Linearizable }

// String is a one-line summary, stable across runs of the same history (no
// times), so that it can be a test failure message.
func (r Result) String() string {
	switch r.Verdict {
	case Linearizable:
		return fmt.Sprintf("linearizable: %d operations over %d keys", r.Ops, r.Keys)
	case Violation:
		names := make([]string, 0, maxShown)
		for _, k := range r.Violating[:min(len(r.Violating), maxShown)] {
			names = append(names, k.String())
		}
		more := ""
		if len(r.Violating) > maxShown {
			more = ", ..."
		}
		return fmt.Sprintf("violation: not linearizable on %d of %d keys, at least (%s%s)", len(r.Violating), r.Keys, strings.Join(names, ", "), more)
	}
	return fmt.Sprintf("unknown: the check timed out with %d of %d keys undecided; not a pass (%d operations)", len(r.Undecided), r.Keys, r.Ops)
}

// Check decides whether h is linearizable with respect to Model, each key on
// its own, within timeout (non-positive: DefaultCheckTimeout). Keys are
// checked in parallel, largest first, and the check stops at the first
// violation. On a violation it also prepares the visualization of the first
// violating keys, for WriteVisualization.
func Check(h History, timeout time.Duration) Result {
	if timeout <= 0 {
		timeout = DefaultCheckTimeout
	}
	start := machineclock.Now()
	deadline := start.Add(timeout)
	parts := byKey(h.Ops)
	verdicts := checkKeys(parts, deadline, h.Conventions)

	res := Result{Ops: len(h.Ops), Keys: len(parts), Timeout: timeout}
	var violating []keyHistory
	for i, v := range verdicts {
		switch v {
		case porcupine.Illegal:
			violating = append(violating, parts[i])
			res.Violating = append(res.Violating, parts[i].key)
		case porcupine.Unknown:
			res.Undecided = append(res.Undecided, parts[i].key)
		}
	}
	switch {
	case len(violating) > 0:
		res.Verdict = Violation
		shown := violating[:min(len(violating), maxShown)]
		res.viz, res.Explanations = explain(shown, max(time.Until(deadline), timeout/2), h.Conventions)
	case len(res.Undecided) > 0:
		res.Verdict = Unknown
	default:
		res.Verdict = Linearizable
	}
	res.Elapsed = machineclock.Since(start)
	return res
}

// checkKeys checks each key's history on its own with porcupine, on as many
// goroutines as there are processors. A key not reached by the deadline is
// Unknown; a key not reached because another was found illegal is left "".
func checkKeys(parts []keyHistory, deadline time.Time, conv store.Conventions) []porcupine.CheckResult {
	m := ModelFor(conv)
	m.Partition = nil // one key at a time already
	order := make([]int, len(parts))
	for i := range order {
		order[i] = i
	}
	// Largest first, so that a hot key starts at once and the small ones
	// fill the other processors around it.
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(len(parts[b].ops), len(parts[a].ops)) })

	verdicts := make([]porcupine.CheckResult, len(parts))
	var next atomic.Int64
	var found atomic.Bool
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(parts)) {
		wg.Go(func() {
			for {
				n := int(next.Add(1) - 1)
				if n >= len(order) || found.Load() {
					return
				}
				i := order[n]
				remaining := time.Until(deadline)
				if remaining <= 0 {
					// Not a zero timeout: porcupine reads 0 as "no limit".
					verdicts[i] = porcupine.Unknown
					continue
				}
				verdicts[i] = porcupine.CheckOperationsTimeout(m, toPorcupine(parts[i].ops), remaining)
				if verdicts[i] == porcupine.Illegal {
					found.Store(true)
				}
			}
		})
	}
	wg.Wait()
	return verdicts
}
