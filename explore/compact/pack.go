package compact

import "encoding/binary"

// Pack appends s to b in a packed form sized by the world, not by the
// compact state's largest one — a few hundred bytes for a small world — so
// that a frontier of millions of states fits in memory. Times are written
// relative to true time.
func (s *State) Pack(cfg *Config, b []byte) []byte {
	ne, ng := len(cfg.Events), cfg.Groups
	b = binary.AppendVarint(b, s.now)
	b = binary.AppendUvarint(b, uint64(s.lastToken))
	b = binary.AppendUvarint(b, uint64(s.nextID))
	b = binary.AppendUvarint(b, s.cov)
	b = append(b, s.gate[:ne]...)
	for g := range ng {
		b = append(b, s.runs[g][:ne]...)
		b = append(b, s.ledger[g][:ne]...)
		for ev := range ne {
			r := &s.recs[g][ev]
			// The monitors' memory of the key, a bit each.
			mem := byte(0)
			for i, f := range [2]bool{s.legit[g][ev], r.settled} {
				if f {
					mem |= 1 << i
				}
			}
			b = append(b, mem)
			b = binary.AppendUvarint(b, uint64(s.latest[g][ev]))
			b = append(b, r.state)
			if r.state == recNone {
				continue
			}
			b = append(b, r.attempts, r.lastErr)
			b = binary.AppendUvarint(b, uint64(r.token))
			b = s.putT(b, r.started)
			b = s.putT(b, r.finished)
			b = s.putT(b, r.lease)
		}
	}
	for n := range cfg.Nodes {
		b = binary.AppendVarint(b, s.skew[n])
	}
	for wi := range cfg.Workers {
		w := &s.workers[wi]
		b = append(b, w.stage)
		if w.stage == stageIdle {
			continue
		}
		flags := byte(0)
		for i, f := range [5]bool{w.hold, w.taken, w.cleaned, w.reclam, w.faulted} {
			if f {
				flags |= 1 << i
			}
		}
		b = append(b, w.result, w.reason, w.attempts, byte(w.event), w.lastErr, w.origin, flags)
		b = binary.AppendUvarint(b, uint64(w.offset))
		b = binary.AppendUvarint(b, uint64(w.id))
		b = binary.AppendUvarint(b, uint64(w.token))
		b = binary.AppendUvarint(b, uint64(w.path))
		b = binary.AppendUvarint(b, uint64(w.last))
		b = s.putT(b, w.holdAt)
		b = s.putT(b, w.at)
	}
	b = binary.AppendUvarint(b, uint64(len(s.msgs)))
	for _, m := range s.msgs {
		b = append(b, byte(m.event), m.origin)
	}
	for i := range s.ents {
		e := &s.ents[i]
		// gaveUp rides in the status byte's high bit.
		st := e.status
		if e.gaveUp {
			st |= 0x80
		}
		b = append(b, st, e.attempts, e.lastErr, e.deliveries)
		b = binary.AppendUvarint(b, uint64(e.poisoned))
		b = binary.AppendUvarint(b, uint64(e.lastDelivery))
		b = s.putT(b, e.eligible)
		b = s.putT(b, e.delivered)
	}
	b = binary.AppendUvarint(b, uint64(len(s.dlq)))
	for _, d := range s.dlq {
		p := byte(0)
		if d.poison {
			p = 1
		}
		b = append(b, byte(d.group), p, d.attempts, d.lastErr)
		b = binary.AppendUvarint(b, uint64(d.offset))
	}
	return b
}

// putT writes a time: 0 for none, else its distance from now, zigzagged
// and shifted by one.
func (s *State) putT(b []byte, t int64) []byte {
	if t == 0 {
		return append(b, 0)
	}
	d := t - s.now
	return binary.AppendUvarint(b, uint64(d<<1^(d>>63))+1)
}

// unpacker reads what Pack wrote.
type unpacker struct {
	b []byte
	i int
}

func (u *unpacker) byte() byte {
	v := u.b[u.i]
	u.i++
	return v
}

func (u *unpacker) bytes(dst []uint8) { u.i += copy(dst, u.b[u.i:u.i+len(dst)]) }

func (u *unpacker) uvarint() uint64 {
	// Most of a state's numbers fit a byte: read those without the loop.
	if c := u.b[u.i]; c < 0x80 {
		u.i++
		return uint64(c)
	}
	v, n := binary.Uvarint(u.b[u.i:])
	u.i += n
	return v
}

func (u *unpacker) varint() int64 {
	v, n := binary.Varint(u.b[u.i:])
	u.i += n
	return v
}

func (u *unpacker) time(now int64) int64 {
	v := u.uvarint()
	if v == 0 {
		return 0
	}
	v--
	return now + (int64(v>>1) ^ -int64(v&1))
}

// Unpack makes s the state Pack wrote into b, reusing s's slices.
func (s *State) Unpack(cfg *Config, b []byte) {
	msgs, ents, dlq := s.msgs[:0], s.ents[:0], s.dlq[:0]
	*s = State{}
	u := &unpacker{b: b}
	ne, ng := len(cfg.Events), cfg.Groups
	s.now = u.varint()
	s.lastToken = uint32(u.uvarint())
	s.nextID = int32(u.uvarint())
	s.cov = u.uvarint()
	u.bytes(s.gate[:ne])
	for g := range ng {
		u.bytes(s.runs[g][:ne])
		u.bytes(s.ledger[g][:ne])
		for ev := range ne {
			mem := u.byte()
			s.legit[g][ev] = mem&1 != 0
			s.latest[g][ev] = uint32(u.uvarint())
			r := &s.recs[g][ev]
			r.state = u.byte()
			r.settled = mem&2 != 0
			if r.state == recNone {
				continue
			}
			r.attempts, r.lastErr = u.byte(), u.byte()
			r.token = uint32(u.uvarint())
			r.started = u.time(s.now)
			r.finished = u.time(s.now)
			r.lease = u.time(s.now)
		}
	}
	for n := range cfg.Nodes {
		s.skew[n] = u.varint()
	}
	for wi := range cfg.Workers {
		w := &s.workers[wi]
		w.stage = u.byte()
		if w.stage == stageIdle {
			continue
		}
		w.result, w.reason, w.attempts, w.event, w.lastErr, w.origin = u.byte(), u.byte(), u.byte(), int8(u.byte()), u.byte(), u.byte()
		flags := u.byte()
		w.hold, w.taken, w.cleaned, w.reclam, w.faulted = flags&1 != 0, flags&2 != 0, flags&4 != 0, flags&8 != 0, flags&16 != 0
		w.offset = int32(u.uvarint())
		w.id = int32(u.uvarint())
		w.token = uint32(u.uvarint())
		w.path = uint32(u.uvarint())
		w.last = uint32(u.uvarint())
		w.holdAt = u.time(s.now)
		w.at = u.time(s.now)
	}
	n := int(u.uvarint())
	for range n {
		msgs = append(msgs, message{event: int8(u.byte()), origin: u.byte()})
	}
	for range n * ng {
		e := entry{status: u.byte(), attempts: u.byte(), lastErr: u.byte(), deliveries: u.byte()}
		e.status, e.gaveUp = e.status&0x7f, e.status&0x80 != 0
		e.poisoned = uint16(u.uvarint())
		e.lastDelivery = int32(u.uvarint())
		e.eligible = u.time(s.now)
		e.delivered = u.time(s.now)
		ents = append(ents, e)
	}
	for range int(u.uvarint()) {
		d := dlqEntry{group: int8(u.byte()), poison: u.byte() == 1, attempts: u.byte(), lastErr: u.byte()}
		d.offset = int32(u.uvarint())
		dlq = append(dlq, d)
	}
	s.msgs, s.ents, s.dlq = msgs, ents, dlq
}
