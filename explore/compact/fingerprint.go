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
	inv     [MaxEvents]int
	classes [][]int
	buf     []byte
	blobs   [MaxWorkers][]byte
	order   []int
	dlq     []dlqEntry
}

var seed = maphash.MakeSeed()

// NewFingerprinter returns a fingerprinter for cfg's states, folding the
// symmetries asked for.
func NewFingerprinter(cfg *Config, symmetricWorkers, symmetricEvents bool) *Fingerprinter {
	f := &Fingerprinter{cfg: cfg, seed: seed}
	f.perms = runner.EventSymmetries(cfg.Sc.Events, symmetricEvents)
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
	var best uint64
	for i, p := range f.perms {
		f.buf = f.encode(s, f.buf[:0], p)
		h := maphash.Bytes(f.seed, f.buf)
		if i == 0 || h < best {
			best = h
		}
	}
	return best
}

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

func (f *Fingerprinter) encode(s *State, b []byte, perm []int) []byte {
	cfg := f.cfg
	now := s.now
	ne := len(cfg.Events)
	for i, l := range perm {
		f.inv[l] = i
	}
	for l := 0; l < ne; l++ {
		ev := f.inv[l]
		b = append(b, s.gate[ev])
		for g := range cfg.Groups {
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
