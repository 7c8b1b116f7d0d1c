package compact

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"slices"

	"github.com/idemcheck/idemcheck/faults/runner"
)

// Fingerprinter hashes a compact state into 64 bits from a canonical
// encoding of the same parts runner.Fingerprinter encodes of a runner's
// world — the gate, handler runs, records (times relative to true time,
// tokens by rank among their key's), ledger, messages with their timers,
// the DLQ, the nodes' skews and each worker's delivery, claim and path —
// so that the two engines fold the same states together; and by the same
// symmetries: interchangeable workers (one group, one node) and events
// alike but for their id. It is not safe for concurrent use.
type Fingerprinter struct {
	cfg     *Config
	seed    maphash.Seed
	perms   [][]int
	classes [][]int
	buf     []byte
	blobs   [MaxWorkers][]byte
	order   []int
	dlq     []dlqEntry
	// invs are the perms' inverses: the event whose part comes l-th.
	invs [][]int
	// group: the perms are closed under composition, so the least
	// encoding over them is the same for every state of an orbit (see Sum).
	group bool
	// blk holds each event's part of the encoding (which no labelling
	// changes), event ev's at blk[at[ev]:at[ev+1]].
	blk  []byte
	at   [MaxEvents + 1]int
	cand []int
	best []byte
}

var seed = maphash.MakeSeed()

// NewFingerprinter returns a fingerprinter for cfg's states, folding the
// symmetries asked for.
func NewFingerprinter(cfg *Config, symmetricWorkers, symmetricEvents bool) *Fingerprinter {
	f := &Fingerprinter{cfg: cfg, seed: seed}
	f.perms = runner.EventSymmetries(cfg.Sc.Events, symmetricEvents)
	f.group = true
	for _, p := range f.perms {
		inv := make([]int, len(p))
		for i, l := range p {
			inv[l] = i
		}
		f.invs = append(f.invs, inv)
		for _, q := range f.perms {
			pq := make([]int, len(p))
			for i := range pq {
				pq[i] = p[q[i]]
			}
			if !slices.ContainsFunc(f.perms, func(r []int) bool { return slices.Equal(r, pq) }) {
				f.group = false
			}
		}
	}
	type class struct{ g, n, w int }
	idx := map[class]int{}
	for i, w := range cfg.Workers {
		k := class{w.Group, w.Node, -1}
		if !symmetricWorkers {
			k.w = i
		}
		c, ok := idx[k]
		if !ok {
			c = len(f.classes)
			idx[k] = c
			f.classes = append(f.classes, nil)
		}
		f.classes[c] = append(f.classes[c], i)
	}
	return f
}

// Sum returns s's fingerprint: the least hash of its encoding over the
// event symmetries.
func (f *Fingerprinter) Sum(s *State) uint64 {
	// The DLQ by group and offset. It holds a few entries at most, so an
	// insertion sort: slices.SortFunc's generic machinery cost more than
	// the sorting.
	f.dlq = append(f.dlq[:0], s.dlq...)
	for i := 1; i < len(f.dlq); i++ {
		for k := i; k > 0 && dlqLess(&f.dlq[k], &f.dlq[k-1]); k-- {
			f.dlq[k], f.dlq[k-1] = f.dlq[k-1], f.dlq[k]
		}
	}
	cfg := f.cfg
	f.blk = f.blk[:0]
	for ev := range cfg.Events {
		f.at[ev] = len(f.blk)
		f.blk = f.eventPart(s, f.blk, ev)
	}
	f.at[len(cfg.Events)] = len(f.blk)
	if len(f.perms) == 1 || !f.group {
		var best uint64
		for i, p := range f.perms {
			f.buf = f.encode(s, f.buf[:0], p, f.invs[i])
			h := maphash.Bytes(f.seed, f.buf)
			if i == 0 || h < best {
				best = h
			}
		}
		return best
	}
	// The hash of the least encoding over the labellings: as they form a
	// group, the states of one orbit have the same encodings, so the same
	// least one, as they have the same least hash. The least is mostly
	// decided by the events' parts, which come first and no labelling
	// changes: only the labellings that order them least are encoded
	// whole (one, unless two alike events are in the same state), where
	// the least hash needs every labelling encoded.
	f.cand = f.cand[:0]
	for i := range f.perms {
		if len(f.cand) > 0 {
			c := f.compareParts(f.invs[i], f.invs[f.cand[0]])
			if c > 0 {
				continue
			}
			if c < 0 {
				f.cand = f.cand[:0]
			}
		}
		f.cand = append(f.cand, i)
	}
	// Labellings that tie there differ first at the label of the first
	// message whose event they label differently (what precedes it in the
	// encoding is the same): keep those that label the messages' events
	// least, message by message. Any still tied label every message's
	// event alike, so every event byte the rest of the encoding holds (the
	// DLQ's and the workers' events are their messages'): they are
	// compared whole all the same, to rest on no such argument.
	for k := 0; k < len(s.msgs) && len(f.cand) > 1; k++ {
		ev := s.msgs[k].event
		least := f.perms[f.cand[0]][ev]
		for _, i := range f.cand[1:] {
			least = min(least, f.perms[i][ev])
		}
		kept := f.cand[:0]
		for _, i := range f.cand {
			if f.perms[i][ev] == least {
				kept = append(kept, i)
			}
		}
		f.cand = kept
	}
	f.best = f.encode(s, f.best[:0], f.perms[f.cand[0]], f.invs[f.cand[0]])
	for _, i := range f.cand[1:] {
		f.buf = f.encode(s, f.buf[:0], f.perms[i], f.invs[i])
		if bytes.Compare(f.buf, f.best) < 0 {
			f.best, f.buf = f.buf, f.best
		}
	}
	return maphash.Bytes(f.seed, f.best)
}

// compareParts compares the events' parts in the order of two labellings'
// inverses. An event's part is self-delimiting, so two labellings'
// encodings compare as their first differing parts do.
func (f *Fingerprinter) compareParts(a, b []int) int {
	for l := range a {
		if a[l] == b[l] {
			continue
		}
		if c := bytes.Compare(f.part(a[l]), f.part(b[l])); c != 0 {
			return c
		}
	}
	return 0
}

// part is event ev's part of the encoding.
func (f *Fingerprinter) part(ev int) []byte { return f.blk[f.at[ev]:f.at[ev+1]] }

// dlqLess orders DLQ entries by group, then offset.
func dlqLess(a, b *dlqEntry) bool {
	if a.group != b.group {
		return a.group < b.group
	}
	return a.offset < b.offset
}

func putI(b []byte, v int64) []byte { return binary.AppendVarint(b, v) }

func rel(t, now int64) int64 {
	if t == 0 {
		return 0
	}
	return t - now
}

// rank is the rank of tok among the tokens s holds for key (g, ev): the
// record's and the busy workers'.
func (f *Fingerprinter) rank(s *State, g, ev int, tok uint32) int64 {
	if tok == 0 {
		return 0
	}
	var toks [MaxWorkers + 1]uint32
	n := 0
	if r := &s.recs[g][ev]; r.state != recNone && r.token != 0 {
		toks[n] = r.token
		n++
	}
	for wi, wc := range f.cfg.Workers {
		if w := &s.workers[wi]; w.stage != stageIdle && w.token != 0 && wc.Group == g && int(w.event) == ev {
			toks[n] = w.token
			n++
		}
	}
	var r int64 = 1
	for i := 0; i < n; i++ {
		if toks[i] < tok && !slices.Contains(toks[:i], toks[i]) {
			r++
		}
	}
	return r
}

// eventPart encodes event ev's gate, handler runs, records and ledger.
func (f *Fingerprinter) eventPart(s *State, b []byte, ev int) []byte {
	now := s.now
	b = append(b, s.gate[ev])
	for g := range f.cfg.Groups {
		b = append(b, s.runs[g][ev])
		r := &s.recs[g][ev]
		if r.state == recNone {
			b = append(b, 0)
		} else {
			b = append(b, 1, r.state, r.attempts, r.lastErr)
			b = putI(b, f.rank(s, g, ev, r.token))
			b = putI(b, rel(r.started, now))
			b = putI(b, rel(r.finished, now))
			b = putI(b, max(rel(r.lease, now), -1))
		}
		b = append(b, s.ledger[g][ev])
	}
	return b
}

// encode appends s's encoding under the labelling perm (inv its inverse):
// the events' parts (eventPart, kept in f.blk by Sum) in the labelling's
// order, then the rest.
func (f *Fingerprinter) encode(s *State, b []byte, perm, inv []int) []byte {
	cfg := f.cfg
	now := s.now
	for _, ev := range inv {
		b = append(b, f.part(ev)...)
	}
	b = putI(b, int64(len(s.msgs)))
	for off, m := range s.msgs {
		b = append(b, byte(perm[m.event]), m.origin)
		for g := range cfg.Groups {
			e := s.ent(cfg, int32(off), g)
			b = append(b, e.status, e.attempts, e.lastErr)
			switch e.status {
			case stPending:
				b = putI(b, max(e.eligible-now, 0))
			case stInflight:
				b = putI(b, max(e.delivered+cfg.AckTimeoutMs-now, 0))
			}
		}
	}
	b = putI(b, int64(len(f.dlq)))
	for _, d := range f.dlq {
		p := byte(0)
		if d.poison {
			p = 1
		}
		b = append(b, byte(d.group), byte(perm[s.msgs[d.offset].event]), d.attempts, d.lastErr, p)
		b = putI(b, int64(d.offset))
	}
	for n := range cfg.Nodes {
		b = putI(b, s.skew[n])
	}
	for _, class := range f.classes {
		for _, wi := range class {
			f.blobs[wi] = f.workerBlob(s, f.blobs[wi][:0], wi, perm)
		}
		// The class's workers by their blobs: an insertion sort, as a
		// class is a few workers (equal blobs are equal bytes, so their
		// order does not matter).
		f.order = append(f.order[:0], class...)
		for i := 1; i < len(f.order); i++ {
			for k := i; k > 0 && bytes.Compare(f.blobs[f.order[k]], f.blobs[f.order[k-1]]) < 0; k-- {
				f.order[k], f.order[k-1] = f.order[k-1], f.order[k]
			}
		}
		for _, wi := range f.order {
			b = append(b, byte(len(f.blobs[wi])))
			b = append(b, f.blobs[wi]...)
		}
	}
	return b
}

func (f *Fingerprinter) workerBlob(s *State, b []byte, wi int, perm []int) []byte {
	w := &s.workers[wi]
	if w.stage == stageIdle {
		return append(b, 0)
	}
	g := f.cfg.Workers[wi].Group
	current := byte(0)
	if s.ent(f.cfg, w.offset, g).lastDelivery == w.id {
		current = 1
	}
	b = append(b, 1, w.attempts, byte(perm[w.event]), current, w.result)
	b = putI(b, int64(w.offset))
	b = putI(b, f.rank(s, g, int(w.event), w.token))
	return binary.LittleEndian.AppendUint32(b, w.path)
}
