package runner

import (
	"maps"
	"slices"

	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/reference/consumer"
	"github.com/idemcheck/idemcheck/impl/reference/membroker"
	"github.com/idemcheck/idemcheck/impl/reference/memstore"
	"github.com/idemcheck/idemcheck/impl/reference/producer"
)

// Clone returns an independent copy of the world as it stands, watched by
// obs, for a search that forks a run instead of playing its schedule
// again. Only worlds made of the reference's in-memory parts can be copied
// — the store exactly a *memstore.Store, the broker a *membroker.Broker,
// the gate a *producer.Gate; any pipeline — since a wrapper's state is its
// own; Clone reports false for every other world (SQL stores, processes,
// mutant stores and brokers), which a search rebuilds by replaying the
// schedule instead.
func (w *World) Clone(obs ...Observer) (*World, bool) {
	st, ok := w.store.(*memstore.Store)
	if !ok {
		return nil, false
	}
	br, ok := w.broker.(*membroker.Broker)
	if !ok {
		return nil, false
	}
	gate, ok := w.producer.Gate.(*producer.Gate)
	if !ok {
		return nil, false
	}
	truth := w.truth.Clone()
	cst := st.Clone(truth)
	cbr := br.Clone(truth)
	c := &World{
		ctx: w.ctx, sc: w.sc, conv: w.conv, truth: truth, nodes: make(map[string]*clock.Node, len(w.nodes)),
		store: cst, broker: cbr, producer: &producer.Producer{Gate: gate.Clone(), Broker: cbr},
		byName: make(map[string]*consumer.Worker, len(w.byName)), nodeOf: w.nodeOf, runs: maps.Clone(w.runs), events: w.events,
		decoded: w.decoded, phase: w.phase, step: w.step, obs: obs,
	}
	for name, n := range w.nodes {
		c.nodes[name] = n.CloneOn(truth)
	}
	cloneTx := func(t store.Tx) (store.Tx, bool) { return memstore.CloneTx(t, cst) }
	for _, wk := range w.workers {
		deps := consumer.Deps{Store: cst, Broker: cbr, Producer: c.producer, Node: c.nodes[w.nodeOf[wk.Name()]], Handler: c.handler, Decode: c.decode}
		cw, ok := wk.Clone(deps, cloneTx)
		if !ok {
			return nil, false
		}
		c.workers = append(c.workers, cw)
		c.byName[cw.Name()] = cw
	}
	res := *w.res
	res.buf = nil // the copy's lists are its own
	res.Actions = slices.Grow(slices.Clone(w.res.Actions), 2)
	res.Errors = slices.Clone(w.res.Errors)
	res.Metrics = maps.Clone(w.res.Metrics)
	c.res = &res
	c.trace = &Trace{entries: slices.Grow(slices.Clone(w.trace.entries), 2), cons: c.res}
	c.view = View{w: c}
	return c, true
}
