package explore

// fpSet is a set of 64-bit fingerprints: open addressing with linear
// probing, 8 bytes a slot, grown at 3/4 full. Zero marks an empty slot, so
// the fingerprint 0 is stored as 1 (a collision chance of 2^-64 more).
type fpSet struct {
	slots []uint64
	n     int
}

func newFPSet() *fpSet { return &fpSet{slots: make([]uint64, 1024)} }

// add inserts fp and reports whether it was new.
func (s *fpSet) add(fp uint64) bool {
	if fp == 0 {
		fp = 1
	}
	if (s.n+1)*4 > len(s.slots)*3 {
		s.grow()
	}
	mask := uint64(len(s.slots) - 1)
	for i := mix(fp) & mask; ; i = (i + 1) & mask {
		switch s.slots[i] {
		case 0:
			s.slots[i] = fp
			s.n++
			return true
		case fp:
			return false
		}
	}
}

func (s *fpSet) grow() {
	old := s.slots
	s.slots = make([]uint64, 2*len(old))
	s.n = 0
	for _, fp := range old {
		if fp != 0 {
			s.add(fp)
		}
	}
}

// bytes is the memory the set holds.
func (s *fpSet) bytes() int { return 8 * len(s.slots) }

// mix spreads a fingerprint's bits over the low ones the table indexes by.
func mix(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	return x
}

// has reports whether fp is in the set; it may run beside other calls of
// has, never beside add.
func (s *fpSet) has(fp uint64) bool {
	if fp == 0 {
		fp = 1
	}
	mask := uint64(len(s.slots) - 1)
	for i := mix(fp) & mask; ; i = (i + 1) & mask {
		switch s.slots[i] {
		case 0:
			return false
		case fp:
			return true
		}
	}
}

// fpIndex maps the fingerprints of one depth's states to their index in
// it: open addressing, 12 bytes a slot, grown at 3/4 full — a third of
// what a Go map takes, which matters at tens of millions of states.
type fpIndex struct {
	keys []uint64
	vals []int32
	n    int
}

func newFPIndex() *fpIndex { return &fpIndex{keys: make([]uint64, 1024), vals: make([]int32, 1024)} }

// get returns the index of fp, if it is there; it may run beside other
// calls of get, never beside put.
func (x *fpIndex) get(fp uint64) (int32, bool) {
	if fp == 0 {
		fp = 1
	}
	mask := uint64(len(x.keys) - 1)
	for i := mix(fp) & mask; ; i = (i + 1) & mask {
		switch x.keys[i] {
		case 0:
			return 0, false
		case fp:
			return x.vals[i], true
		}
	}
}

// put records fp at index v; fp must not be there yet.
func (x *fpIndex) put(fp uint64, v int32) {
	if fp == 0 {
		fp = 1
	}
	if (x.n+1)*4 > len(x.keys)*3 {
		keys, vals := x.keys, x.vals
		x.keys, x.vals, x.n = make([]uint64, 2*len(keys)), make([]int32, 2*len(keys)), 0
		for i, k := range keys {
			if k != 0 {
				x.put(k, vals[i])
			}
		}
	}
	mask := uint64(len(x.keys) - 1)
	i := mix(fp) & mask
	for x.keys[i] != 0 {
		i = (i + 1) & mask
	}
	x.keys[i], x.vals[i] = fp, v
	x.n++
}

// arena holds packed states in large chunks, each copied in at its exact
// size: a depth's frontier costs its bytes and a slice header a state.
type arena struct {
	chunk []byte
}

const arenaChunk = 4 << 20

// add copies b into the arena and returns the copy.
func (a *arena) add(b []byte) []byte {
	if cap(a.chunk)-len(a.chunk) < len(b) {
		a.chunk = make([]byte, 0, max(arenaChunk, len(b)))
	}
	start := len(a.chunk)
	a.chunk = append(a.chunk, b...)
	return a.chunk[start:len(a.chunk):len(a.chunk)]
}
