package consumerharness

import (
	"slices"

	runhistory "github.com/idemcheck/idemcheck/internal/history"
	"github.com/idemcheck/idemcheck/internal/law"
)

// History converts o into the history the shared laws judge (package
// internal/history): its one group, the produces the broker enqueued,
// the deliveries before the replay with what the consumer answered, the
// dead-letter queue once quiet and at the end, and the effects once quiet
// per event (none when c's effects are totals per user, which say nothing
// of one event).
func (c Consumer) History(o *Outcome) *runhistory.History {
	h := &runhistory.History{Source: runhistory.Consumer, Groups: []string{Group}, MaxAttempts: o.Scenario.Policy.MaxAttempts,
		Quiesced: o.Failure == nil, DLQQuiet: o.DLQQuiet, DLQ: o.DLQ}
	produced := map[string]bool{}
	for _, m := range o.Messages {
		produced[m.Message.Key] = true
		if m.Message.Group == Group {
			h.Produces = append(h.Produces, runhistory.Produce{Tenant: m.Message.Tenant, Topic: m.Message.Topic, Key: m.Message.Key, Offset: m.Message.Offset, Origin: m.Message.Origin})
		}
	}
	for _, e := range o.Scenario.Events {
		h.Events = append(h.Events, runhistory.Event{ID: e.ID, Poison: e.Poison, Produced: produced[e.ID]})
	}
	if !c.Effects.Aggregate {
		h.Credits = map[law.GroupKey]int{}
		j := judge{c: c, o: o, s: o.Scenario}
		for id, n := range j.counts(o.Quiet) {
			if n > 0 {
				h.Credits[law.GroupKey{Group: Group, Key: id}] = n
			}
		}
	}
	for i := range o.Deliveries {
		d := &o.Deliveries[i]
		if d.AfterReplay {
			continue
		}
		h.Deliveries = append(h.Deliveries, runhistory.Delivery{Group: Group, Event: d.Event, Offset: d.Offset, Attempt: d.Attempt,
			Answer: string(d.Answer), Reason: d.Error, GaveUp: d.gaveUp(), Account: d})
	}
	return h
}

// shared lists the laws c is judged by through their one function over
// its history (package internal/history): the judge table's laws of the
// properties in Laws, but for those this package still judges with its
// own code (the ones Laws names), in the order of Laws.
func shared() []string {
	var out []string
	for _, p := range Laws {
		for _, id := range runhistory.OfProperty(p, Laws...) {
			if !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
	}
	return out
}

// rank is the place of law id's breaches in a report: its own in Laws, or
// its property's for a law judged through the shared table.
func rank(id string) int {
	if i := slices.Index(Laws, id); i >= 0 {
		return i
	}
	l, _ := law.Lookup(id)
	return slices.Index(Laws, l.Property)
}
