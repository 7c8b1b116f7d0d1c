package runner

import (
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// Observer watches a consumption run action by action — rapid's
// state-machine idea of a check after every action. The runner only
// observes and records; the properties judge, through observers of their
// own (package properties) and the final result.
type Observer interface {
	// BeforeStep is called before a worker takes a pipeline step, with the
	// world as it stands.
	BeforeStep(v *View, worker string)
	// After is called after every action, once it is recorded.
	After(v *View, a *Action)
}

// View is an observer's read-only window on the world between two actions.
// Reads of the store that fail are recorded as unexpected errors of the
// run and read as empty. Reads are cached until the next action, so that
// several observers share one; callers must not modify what they get.
type View struct {
	w             *World
	recsAt, ledAt int // the action count the cached reads were made at, +1
	recs          []store.Record
	led           []store.Entry
}

// Config is the scenario's configuration.
func (v *View) Config() scenario.Config { return v.w.sc.Config }

// Events are the scenario's events.
func (v *View) Events() []scenario.Event { return v.w.sc.Events }

// Actions are the actions recorded so far.
func (v *View) Actions() []Action { return v.w.res.Actions }

// NowMs is the absolute true time now: the store's own clock.
func (v *View) NowMs() int64 { return v.w.truth.NowMs() }

// StartMs is the absolute true time of the start.
func (v *View) StartMs() int64 { return StartMs }

// Records reads every claim record.
func (v *View) Records() []store.Record {
	if n := len(v.w.res.Actions) + 1; v.recsAt != n {
		recs, err := v.w.store.Records(v.w.ctx)
		if err != nil {
			v.w.unexpected("records", err)
		}
		v.recs, v.recsAt = recs, n
	}
	return v.recs
}

// Ledger reads every ledger entry.
func (v *View) Ledger() []store.Entry {
	if n := len(v.w.res.Actions) + 1; v.ledAt != n {
		v.led, v.ledAt = v.w.ledger(), n
	}
	return v.led
}

// DLQ reads the dead-letter queue.
func (v *View) DLQ() []broker.DLQEntry { return v.w.broker.DLQ() }

// Messages reads the broker's messages.
func (v *View) Messages() []broker.MessageState { return v.w.broker.Messages() }

// Held returns the key and fencing token of the claim worker holds (a zero
// token when it holds none).
func (v *View) Held(worker string) (store.Key, uint64) {
	if wk, ok := v.w.byName[worker]; ok {
		return wk.Held()
	}
	return store.Key{}, 0
}

// Busy returns the key of the delivery worker has in hand, and whether it
// has one: a claim by another worker on that key is a concurrent claim.
func (v *View) Busy(worker string) (store.Key, bool) {
	wk, ok := v.w.byName[worker]
	if !ok {
		return store.Key{}, false
	}
	d, busy := wk.Delivery()
	if !busy {
		return store.Key{}, false
	}
	return store.Key{Tenant: d.Message.Tenant, Consumer: wk.Consumer(), ID: d.Message.Key}, true
}

// Conventions are the store's declared conventions: what a check may accept
// as a legitimate difference (a stale release that is a silent no-op).
func (v *View) Conventions() store.Conventions { return v.w.conv }
