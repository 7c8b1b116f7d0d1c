package search

import "time"

// Result is what every search reports, whatever its strategy: embedded in
// each engine's result (explore.Result, consumertest.VerifyResult), so
// that the reports and the command line read them alike.
type Result struct {
	// States counts the distinct states the search reached (named, for a
	// search that names states only where it caches them).
	States int64 `json:"states"`
	// BytesPerState is the memory of what the search keeps of its states
	// (its visited set and what hangs off it), per state.
	BytesPerState float64 `json:"bytesPerState,omitempty"`
	// Stopped says why the search ended before its bounds were searched
	// ("" when it did not): interrupted, or a budget (Budget.Reason).
	Stopped string `json:"stopped,omitempty"`
	// Elapsed is the wall time of the search.
	Elapsed time.Duration `json:"elapsedNs"`
}

// StatesPerSecond is the rate of distinct states.
func (r Result) StatesPerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.States) / r.Elapsed.Seconds()
}

// Counterexample is what every search says of the schedule it found to
// break a law, embedded in each engine's own account of it.
type Counterexample struct {
	// Law names the law broken first: the property's and the law's names,
	// "property/law", for the reference's laws, the law's for a team's
	// consumer.
	Law string `json:"law,omitempty"`
}
