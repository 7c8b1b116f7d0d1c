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
