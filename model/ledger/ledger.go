// Package ledger is the sequential specification of what the crediting
// consumers must end with: for every consumer group, every produced event
// credited exactly once, unless the event sits in that group's DLQ; poison
// events never credited. It is pure: no I/O, no randomness, and it imports
// nothing of the implementation.
package ledger

import "sort"

// Event is what the model needs to know of an event.
type Event struct {
	ID     string
	Poison bool
}

// Expectation is the model's verdict for one (consumer, event).
type Expectation struct {
	Consumer string
	EventID  string
	// Credits is how many ledger entries the model expects: 1, or 0 for a
	// poison event.
	Credits int
	// DeadLettered says the event sits in the consumer's DLQ, which excuses
	// a missing credit (and is required of a poison event).
	DeadLettered bool
}

// ID is the "consumer/event" name of the expectation.
func (x Expectation) ID() string { return x.Consumer + "/" + x.EventID }

// Expected returns the expectation for every (consumer, produced event),
// sorted by consumer then event id. produced holds the ids of events any
// message of which was enqueued; deadLettered holds "consumer/id" names.
func Expected(consumers []string, events []Event, produced, deadLettered map[string]bool) []Expectation {
	var out []Expectation
	for _, c := range consumers {
		for _, e := range events {
			if !produced[e.ID] {
				continue
			}
			x := Expectation{Consumer: c, EventID: e.ID, Credits: 1}
			x.DeadLettered = deadLettered[x.ID()]
			if e.Poison {
				x.Credits = 0
			}
			out = append(out, x)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID() < out[j].ID() })
	return out
}

// Violation returns what is wrong with got credits for x, or "".
func (x Expectation) Violation(got int) string {
	switch {
	case got == x.Credits && (x.Credits > 0 || x.DeadLettered):
		return ""
	case got == 0 && x.DeadLettered:
		return ""
	case got > 1:
		return "credited more than once"
	case got == 1 && x.Credits == 0:
		return "a poison event was credited"
	case x.Credits == 0:
		return "a poison event is not in the DLQ"
	}
	return "produced but neither credited nor in the DLQ"
}

// Credits is the model's ledger as counts per "consumer/event", leaving out
// events the model expects no entry for, in the shape a diff against the
// observed counts reads well.
func Credits(want []Expectation, got map[string]int) map[string]int {
	out := map[string]int{}
	for _, x := range want {
		n := x.Credits
		if x.DeadLettered && got[x.ID()] == 0 {
			n = 0
		}
		if n > 0 {
			out[x.ID()] = n
		}
	}
	return out
}
