package coverage

import (
	"fmt"
	"math/bits"
	"strings"

	"github.com/idemcheck/idemcheck/faults/scenario"
)

// MinChecks is the size of a campaign from which every situation must have
// been reached: a campaign (or a Conformance law) of a count of at least
// this many checks fixed in advance, in which a situation of a kind it
// played (and its target can reach) was never reached, fails. A count
// that is whatever fitted in a time budget is never judged: it depends on
// the machine's speed.
const MinChecks = 10_000

// Counts are how often runs reached each situation. The zero value is ready
// to use; Counts of parallel workers merge with Merge. They encode to JSON
// as they are, for worker processes to send to their parent.
type Counts struct {
	// Runs is the number of runs observed, by scenario kind.
	Runs map[scenario.Kind]int64 `json:"runs,omitempty"`
	// Reached is, by situation name, the number of runs that reached it.
	Reached map[string]int64 `json:"reached,omitempty"`
}

// AddRun counts one run of kind k that reached the situations of set.
func (c *Counts) AddRun(k scenario.Kind, set Set) {
	var t Tally
	t.Add(set)
	c.AddTally(k, &t)
}

// Tally counts runs of one kind by situation index, for a caller that
// counts millions of runs: Add costs a few instructions where AddRun names
// each situation reached and counts it in a map. AddTally adds it to
// Counts. The zero value is ready to use.
type Tally struct {
	runs    int64
	reached [64]int64
}

// Add counts one run that reached the situations of set.
func (t *Tally) Add(set Set) {
	t.runs++
	for x := uint64(set); x != 0; x &= x - 1 {
		t.reached[bits.TrailingZeros64(x)]++
	}
}

// AddTally adds the runs of kind k that t counted.
func (c *Counts) AddTally(k scenario.Kind, t *Tally) {
	if t.runs == 0 {
		return
	}
	if c.Runs == nil {
		c.Runs = map[scenario.Kind]int64{}
	}
	c.Runs[k] += t.runs
	for i, sit := range situations {
		if n := t.reached[i]; n > 0 {
			if c.Reached == nil {
				c.Reached = map[string]int64{}
			}
			c.Reached[sit.Name] += n
		}
	}
}

// Merge adds o's counts to c.
func (c *Counts) Merge(o Counts) {
	for k, n := range o.Runs {
		if c.Runs == nil {
			c.Runs = map[scenario.Kind]int64{}
		}
		c.Runs[k] += n
	}
	for name, n := range o.Reached {
		if c.Reached == nil {
			c.Reached = map[string]int64{}
		}
		c.Reached[name] += n
	}
}

// Total is the number of runs of every kind.
func (c Counts) Total() int64 {
	var n int64
	for _, r := range c.Runs {
		n += r
	}
	return n
}

// Missing returns the situations never reached, of the kinds that were run
// at all: a campaign over consumption properties only is not blamed for
// the projection situations.
func (c Counts) Missing() []Situation {
	var out []Situation
	for _, s := range situations {
		if c.Runs[s.Kind] > 0 && c.Reached[s.Name] == 0 {
			out = append(out, s)
		}
	}
	return out
}

// Judged reports whether c is big enough for Missing to fail a run: at
// least MinChecks runs.
func (c Counts) Judged() bool { return c.Total() >= MinChecks }

// Failure is the complaint about c: empty when every situation of a kind
// that was run has been reached, or when c is too small to be judged.
func (c Counts) Failure() string { return c.FailureExcept(nil) }

// FailureExcept is Failure for a run that cannot reach the situations
// named in unreachable (a store whose conventions rule them out: one that
// expires its records itself is never cleaned up).
func (c Counts) FailureExcept(unreachable map[string]string) string {
	if !c.Judged() {
		return ""
	}
	var names []string
	for _, s := range c.Missing() {
		if _, skip := unreachable[s.Name]; !skip {
			names = append(names, s.Name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf("coverage: %d runs never reached %s: the checks proved nothing about them (tune the generator, or run longer)",
		c.Total(), strings.Join(names, ", "))
}

// Row is one situation's line in a coverage table.
type Row struct {
	Name string        `json:"name"`
	Kind scenario.Kind `json:"kind"`
	Doc  string        `json:"doc"`
	// Runs is the number of runs of the situation's kind; Reached how many
	// of them reached it.
	Runs    int64 `json:"runs"`
	Reached int64 `json:"reached"`
	// Missing is true when runs of its kind were made but none reached it.
	Missing bool `json:"missing"`
}

// Percent is the share of runs that reached the situation.
func (r Row) Percent() float64 {
	if r.Runs == 0 {
		return 0
	}
	return 100 * float64(r.Reached) / float64(r.Runs)
}

// Rows is the coverage table, in registry order: every situation of a kind
// that was run.
func (c Counts) Rows() []Row {
	var out []Row
	for _, s := range situations {
		runs := c.Runs[s.Kind]
		if runs == 0 {
			continue
		}
		n := c.Reached[s.Name]
		out = append(out, Row{Name: s.Name, Kind: s.Kind, Doc: s.Doc, Runs: runs, Reached: n, Missing: n == 0})
	}
	return out
}
