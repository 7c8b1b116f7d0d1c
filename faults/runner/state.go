package runner

import (
	"encoding/binary"
	"hash/maphash"
	"slices"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/reference/consumer"
)

// FingerprintOptions choose the symmetries a Fingerprinter folds together.
type FingerprintOptions struct {
	// SymmetricWorkers treats the workers of one consumer group on one node
	// as interchangeable: states that differ only by which of them holds
	// what get one fingerprint.
	SymmetricWorkers bool
	// SymmetricEvents treats events that differ only by their id (same
	// tenant, order, user, amount, fate) as interchangeable.
	SymmetricEvents bool
}

// Fingerprinter hashes a consumption world's whole state into 64 bits from
// a canonical binary encoding: the store's records (times relative to true
// time, fencing tokens by their rank among the tokens of their key) and
// ledger, the producer gate, the handler runs, the broker's messages with
// status, attempts, last error and timers, the DLQ, the nodes' clock skews,
// and each worker's delivery, claim, trail and process memory. Absolute
// true time and the history (the actions, the metrics) are left out, so two
// schedules that reach the same state meet.
//
// The broker's timers are exact for brokers with an EachMessage method (the
// reference membroker and the mutants over it); other brokers are read
// through the contract, without their timers. A Fingerprinter is not safe
// for concurrent use; it reuses its buffers, so fingerprinting allocates
// little beyond what the store's Records and Ledger return.
type Fingerprinter struct {
	sc      *scenario.Consumption
	opts    FingerprintOptions
	seed    maphash.Seed
	perms   [][]int // event index -> label, one per symmetry of the events
	inv     []int
	classes [][]int // worker indexes, by class
	consIdx map[string]int
	buf     []byte
	blobs   [][]byte
	order   []int
	recs    []store.Record
	led     []store.Entry
	msgs    []msgState
	dlq     []broker.DLQEntry
	toks    []uint64
}

type msgState struct {
	group               int
	offset              int64
	key, tenant         string
	origin              broker.Origin
	status              broker.Status
	attempts            int
	lastError           string
	eligible, deadline  int64
	lastDelivery        int64
	timersKnown, hasIDs bool
}

// fingerprintSeed is one seed for the process, so every Fingerprinter of a
// search agrees.
var fingerprintSeed = maphash.MakeSeed()

// NewFingerprinter returns a fingerprinter for worlds playing sc.
func NewFingerprinter(sc *scenario.Consumption, o FingerprintOptions) *Fingerprinter {
	f := &Fingerprinter{sc: sc, opts: o, seed: fingerprintSeed, consIdx: map[string]int{}}
	for i, c := range sc.Config.Consumers {
		f.consIdx[c] = i
	}
	f.perms = EventSymmetries(sc.Events, o.SymmetricEvents)
	f.inv = make([]int, len(sc.Events))
	byClass := map[[2]string][]int{}
	var keys [][2]string
	for i, w := range sc.Config.Workers {
		k := [2]string{w.Consumer, w.Node}
		if !o.SymmetricWorkers {
			k = [2]string{w.Name, ""}
		}
		if _, ok := byClass[k]; !ok {
			keys = append(keys, k)
		}
		byClass[k] = append(byClass[k], i)
	}
	for _, k := range keys {
		f.classes = append(f.classes, byClass[k])
	}
	f.blobs = make([][]byte, len(sc.Config.Workers))
	return f
}

// maxPerms bounds the event symmetries tried: beyond it the reduction
// folds fewer states together, never wrongly.
const maxPerms = 24

// EventSymmetries lists the labellings of the events that permute only
// events alike but for their ids (the identity first), at most 24: what a
// fingerprint folds under SymmetricEvents. The explorer's compact engine
// folds by the same list, so that both engines meet the same states.
func EventSymmetries(evs []scenario.Event, symmetric bool) [][]int {
	id := make([]int, len(evs))
	for i := range id {
		id[i] = i
	}
	perms := [][]int{id}
	if !symmetric {
		return perms
	}
	alike := func(a, b scenario.Event) bool {
		a.ID, b.ID = "", ""
		return a == b
	}
	var rec func(p []int, i int)
	rec = func(p []int, i int) {
		if i == len(p) {
			if !slices.Equal(p, id) && len(perms) < maxPerms {
				perms = append(perms, slices.Clone(p))
			}
			return
		}
		for j := i; j < len(p); j++ {
			if !alike(evs[p[i]], evs[p[j]]) {
				continue
			}
			p[i], p[j] = p[j], p[i]
			rec(p, i+1)
			p[i], p[j] = p[j], p[i]
		}
	}
	rec(slices.Clone(id), 0)
	return perms
}

// Sum returns w's fingerprint: the least hash of its encoding over the
// symmetries.
func (f *Fingerprinter) Sum(w *World) uint64 {
	f.gather(w)
	var best uint64
	for i, p := range f.perms {
		f.buf = f.encode(w, f.buf[:0], p)
		h := maphash.Bytes(f.seed, f.buf)
		if i == 0 || h < best {
			best = h
		}
	}
	return best
}

// Encoding returns the canonical encoding of w's state under the identity
// labelling of its events (what Sum hashes), as a fresh slice.
func (f *Fingerprinter) Encoding(w *World) []byte {
	f.gather(w)
	return slices.Clone(f.encode(w, nil, f.perms[0]))
}

type eachMessager interface {
	EachMessage(func(m *broker.Message, status broker.Status, eligibleAtMs, deliveredAtMs, lastDelivery int64))
}

type eachDLQer interface {
	EachDLQ(func(d *broker.DLQEntry))
}

// gather reads the parts of the state the encoding needs once per Sum.
func (f *Fingerprinter) gather(w *World) {
	var err error
	if f.recs, err = w.store.Records(w.ctx); err != nil {
		w.unexpected("records", err)
	}
	f.led = w.ledger()
	f.msgs = f.msgs[:0]
	groupIdx := func(g string) int { return f.consIdx[g] }
	if em, ok := w.broker.(eachMessager); ok {
		em.EachMessage(func(m *broker.Message, st broker.Status, el, del, last int64) {
			f.msgs = append(f.msgs, msgState{group: groupIdx(m.Group), offset: m.Offset, key: m.Key, tenant: m.Tenant, origin: m.Origin,
				status: st, attempts: m.Attempts, lastError: m.LastError, eligible: el, deadline: del, lastDelivery: last, timersKnown: true, hasIDs: true})
		})
	} else {
		for _, m := range w.broker.Messages() {
			f.msgs = append(f.msgs, msgState{group: groupIdx(m.Message.Group), offset: m.Message.Offset, key: m.Message.Key, tenant: m.Message.Tenant,
				origin: m.Message.Origin, status: m.Status, attempts: m.Message.Attempts, lastError: m.Message.LastError})
		}
	}
	f.dlq = f.dlq[:0]
	if ed, ok := w.broker.(eachDLQer); ok {
		ed.EachDLQ(func(d *broker.DLQEntry) { f.dlq = append(f.dlq, *d) })
	} else {
		f.dlq = append(f.dlq, w.broker.DLQ()...)
	}
	slices.SortFunc(f.dlq, func(a, b broker.DLQEntry) int {
		if a.Group != b.Group {
			return f.consIdx[a.Group] - f.consIdx[b.Group]
		}
		switch {
		case a.Offset < b.Offset:
			return -1
		case a.Offset > b.Offset:
			return 1
		}
		return 0
	})
}

func putI(b []byte, v int64) []byte { return binary.AppendVarint(b, v) }

func putS(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// label is the symmetric name of an event id under perm (-1: not an event
// of the scenario, written out in full by the caller).
func (f *Fingerprinter) label(w *World, id string, perm []int) int {
	if i, ok := w.events[id]; ok {
		return perm[i]
	}
	return -1
}

func (f *Fingerprinter) putKey(b []byte, w *World, id string, perm []int) []byte {
	l := f.label(w, id, perm)
	b = putI(b, int64(l))
	if l < 0 {
		b = putS(b, id)
	}
	return b
}

// tokenRank is the rank of tok among every token the state holds for key
// (the record's and the workers'): fencing compares tokens of one key only,
// so their order, not their values, is the state.
func (f *Fingerprinter) tokenRank(w *World, key store.Key, tok uint64) int64 {
	if tok == 0 {
		return 0
	}
	f.toks = f.toks[:0]
	for i := range f.recs {
		if f.recs[i].Key == key && f.recs[i].Token != 0 {
			f.toks = append(f.toks, f.recs[i].Token)
		}
	}
	for _, wk := range w.workers {
		if k, t := wk.Held(); t != 0 && k == key {
			f.toks = append(f.toks, t)
		}
	}
	var r int64 = 1
	for i, t := range f.toks {
		if t < tok && !slices.Contains(f.toks[:i], t) {
			r++
		}
	}
	return r
}

func stateByte(s store.State) byte {
	switch s {
	case store.Processing:
		return 1
	case store.Processed:
		return 2
	case "":
		return 0
	}
	return 3
}

func rel(t, now int64) int64 {
	if t == 0 {
		return 0
	}
	return t - now
}

func (f *Fingerprinter) encode(w *World, b []byte, perm []int) []byte {
	now := w.truth.NowMs()
	ne := len(w.sc.Events)
	for i, l := range perm {
		f.inv[l] = i
	}
	cfg := &w.sc.Config
	// Per event, in label order: gate, handler runs, records, ledger.
	for l := 0; l < ne; l++ {
		ev := &w.sc.Events[f.inv[l]]
		b = putS(b, string(w.producer.Gate.State(broker.Identity{Tenant: ev.Tenant, Topic: cfg.Topic, Key: ev.ID})))
		for _, c := range cfg.Consumers {
			b = putI(b, int64(w.runs[c+"/"+ev.ID]))
			key := store.Key{Tenant: ev.Tenant, Consumer: c, ID: ev.ID}
			found := false
			for i := range f.recs {
				r := &f.recs[i]
				if r.Key != key {
					continue
				}
				found = true
				b = append(b, 1, stateByte(r.State))
				if stateByte(r.State) == 3 {
					b = putS(b, string(r.State))
				}
				b = putI(b, int64(r.Attempts))
				b = putI(b, f.tokenRank(w, key, r.Token))
				b = putI(b, rel(r.StartedAtMs, now))
				b = putI(b, rel(r.FinishedAtMs, now))
				lease := rel(r.LeaseUntilMs, now)
				if lease < -1 {
					lease = -1 // long expired is expired
				}
				b = putI(b, lease)
				b = putS(b, r.LastError)
			}
			if !found {
				b = append(b, 0)
			}
			n := 0
			for i := range f.led {
				if e := &f.led[i]; e.Consumer == c && e.EventID == ev.ID {
					n++
				}
			}
			b = putI(b, int64(n))
			for i := range f.led {
				if e := &f.led[i]; e.Consumer == c && e.EventID == ev.ID {
					b = putS(b, e.OrderID)
					b = putS(b, e.UserID)
					b = putI(b, e.AmountCents)
				}
			}
		}
	}
	// Records and ledger entries of ids that are no event of the scenario.
	for i := range f.recs {
		r := &f.recs[i]
		if _, ok := w.events[r.Key.ID]; !ok {
			b = append(b, 9)
			b = putS(b, r.Key.Consumer)
			b = putS(b, r.Key.ID)
			b = append(b, stateByte(r.State))
			b = putI(b, int64(r.Attempts))
		}
	}
	for i := range f.led {
		if _, ok := w.events[f.led[i].EventID]; !ok {
			b = append(b, 8)
			b = putS(b, f.led[i].Consumer)
			b = putS(b, f.led[i].EventID)
		}
	}
	// The broker's messages, by group then offset.
	b = putI(b, int64(len(f.msgs)))
	for i := range f.msgs {
		m := &f.msgs[i]
		b = putI(b, int64(m.group))
		b = putI(b, m.offset)
		b = f.putKey(b, w, m.key, perm)
		b = putS(b, string(m.origin))
		b = putS(b, string(m.status))
		b = putI(b, int64(m.attempts))
		b = putS(b, m.lastError)
		var el, dl int64
		if m.timersKnown {
			switch m.status {
			case broker.Pending:
				el = max(m.eligible-now, 0)
			case broker.Inflight:
				dl = max(m.deadline+cfg.AckTimeoutMs-now, 0)
			}
		}
		b = putI(b, el)
		b = putI(b, dl)
	}
	// The DLQ, by group then offset.
	b = putI(b, int64(len(f.dlq)))
	for i := range f.dlq {
		d := &f.dlq[i]
		b = putI(b, int64(f.consIdx[d.Group]))
		b = putI(b, d.Offset)
		b = f.putKey(b, w, d.Key, perm)
		b = putI(b, int64(d.Attempts))
		b = putS(b, d.LastError)
		if d.Poison {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	}
	// The nodes' clocks, relative to true time.
	for _, n := range cfg.Nodes {
		b = putI(b, w.nodes[n.Name].SkewMs())
	}
	// The workers, by class; within a class in canonical order.
	for _, class := range f.classes {
		for _, wi := range class {
			f.blobs[wi] = f.workerBlob(w, f.blobs[wi][:0], w.workers[wi], perm)
		}
		f.order = append(f.order[:0], class...)
		if len(f.order) > 1 {
			slices.SortFunc(f.order, func(x, y int) int { return compareBytes(f.blobs[x], f.blobs[y]) })
		}
		for _, wi := range f.order {
			b = putI(b, int64(len(f.blobs[wi])))
			b = append(b, f.blobs[wi]...)
		}
	}
	return b
}

func compareBytes(a, b []byte) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return int(a[i]) - int(b[i])
		}
	}
	return len(a) - len(b)
}

func (f *Fingerprinter) workerBlob(w *World, b []byte, wk *consumer.Worker, perm []int) []byte {
	d, busy := wk.Delivery()
	if !busy {
		b = append(b, 0)
	} else {
		b = append(b, 1)
		m := &d.Message
		b = putI(b, int64(f.consIdx[m.Group]))
		b = putI(b, m.Offset)
		b = putI(b, int64(m.Attempts))
		b = f.putKey(b, w, m.Key, perm)
		current := byte(2) // unknown
		for i := range f.msgs {
			if f.msgs[i].hasIDs && f.msgs[i].group == f.consIdx[m.Group] && f.msgs[i].offset == m.Offset {
				current = 0
				if f.msgs[i].lastDelivery == d.ID {
					current = 1
				}
			}
		}
		b = append(b, current)
		key, tok := wk.Held()
		b = putI(b, f.tokenRank(w, key, tok))
		b = binary.LittleEndian.AppendUint64(b, wk.Trail())
		b = putS(b, string(wk.Result().Kind))
	}
	// Process memory (a mutant's dedupe set): its keys' labels, sorted.
	var mem [8]int64
	n := 0
	wk.EachRemembered(func(k store.Key) {
		if n < len(mem) {
			mem[n] = int64(f.label(w, k.ID, perm))*int64(len(f.sc.Config.Consumers)+1) + int64(f.consIdx[k.Consumer])
			n++
		}
	})
	slices.Sort(mem[:n])
	b = putI(b, int64(n))
	for _, v := range mem[:n] {
		b = putI(b, v)
	}
	return b
}

// View returns the observers' window on the world as it stands.
func (w *World) View() *View { return &w.view }
