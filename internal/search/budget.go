package search

import (
	"context"
	"fmt"
	"time"
)

// Bound names what ended a search early.
type Bound int

// The bounds of a Budget.
const (
	// Unbound: nothing ended the search early.
	Unbound Bound = iota
	// Interrupted: the context ended.
	Interrupted
	// OutOfTime: the time budget ran out.
	OutOfTime
	// OutOfCount: the budget of states (or schedules) ran out.
	OutOfCount
	// OutOfMemory: the search's memory grew past its budget.
	OutOfMemory
)

// Budget bounds a search: a context, a time, a count of what the search
// counts (states, schedules: Unit names it) and the memory of its sets.
// The zero value of each is no bound.
type Budget struct {
	Context context.Context
	Time    time.Duration
	Count   int64
	// Unit is what Count counts, for Reason ("state" when empty).
	Unit   string
	Memory int64

	deadline time.Time
}

// Start starts the clock of the time budget.
func (b *Budget) Start(now time.Time) {
	if b.Time > 0 {
		b.deadline = now.Add(b.Time)
	}
}

// Spent reports which bound the search has reached, having counted count
// and holding bytes of memory: the first of the context, the time, the
// count and the memory (Unbound: none).
func (b *Budget) Spent(count, bytes int64) Bound {
	switch {
	case b.Context != nil && b.Context.Err() != nil:
		return Interrupted
	case !b.deadline.IsZero() && time.Now().After(b.deadline):
		return OutOfTime
	case b.Count > 0 && count >= b.Count:
		return OutOfCount
	case b.Memory > 0 && bytes >= b.Memory:
		return OutOfMemory
	}
	return Unbound
}

// Reason says, in words, why bound k ended the search ("" for Unbound).
func (b *Budget) Reason(k Bound) string {
	switch k {
	case Interrupted:
		return "interrupted"
	case OutOfTime:
		return fmt.Sprintf("the time budget (%s) ran out", b.Time)
	case OutOfCount:
		unit := b.Unit
		if unit == "" {
			unit = "state"
		}
		return fmt.Sprintf("the %s budget (%d) ran out", unit, b.Count)
	case OutOfMemory:
		return fmt.Sprintf("the memory budget (%d bytes) ran out", b.Memory)
	}
	return ""
}
