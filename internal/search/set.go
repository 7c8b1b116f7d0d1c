// Package search is the core the model checkers share: a state's 128-bit
// fingerprint and the visited set over it, the budget that bounds a search
// and names the bound that ended it, the breadth-first level loop of
// package explore's engines, the depth-first search with sleep sets and
// preemption bounding of consumertest's Verify, and the counts a search
// reports.
package search

import (
	"math/bits"

	"github.com/idemcheck/idemcheck/internal/offheap"
)

// Key is a state's fingerprint: 128 bits, so that a search of billions of
// states meets a collision with a chance of about 2^-64. A 64-bit
// fingerprint is widened by Key64.
type Key [2]uint64

// Key64 is the key of a 64-bit fingerprint.
func Key64(fp uint64) Key { return Key{fp, 0} }

// Set is a set of keys, each with an optional int32 (Put, Get): open
// addressing with linear probing, grown at 3/4 full, 16 bytes a slot (20
// once a value was put) — a fraction of what a Go map takes, which
// matters at tens of millions of states. The zero key marks an empty
// slot, so Key{} is stored as Key{1, 0} (a collision chance of 2^-128
// more). It is not safe for concurrent use, except Has and Get beside
// each other. A large set's slots are mapped outside the Go heap
// (package offheap), so the collector's heap goal does not double them;
// Free gives them back at once.
type Set struct {
	keys           []Key
	vals           []int32
	keyMem, valMem *offheap.Block
	n              int
}

// NewSet returns an empty set.
func NewSet() *Set {
	s := &Set{}
	s.keyMem, s.keys = offheap.Make[Key](64)
	return s
}

// Free gives the set's memory back; the set must not be used afterwards.
func (s *Set) Free() {
	s.keyMem.Free()
	s.valMem.Free()
	s.keys, s.vals, s.keyMem, s.valMem, s.n = nil, nil, nil, nil, 0
}

// slot spreads a key's bits over the low ones the table indexes by (the
// murmur3 finalizer over the halves folded together).
func slot(k Key) uint64 {
	x := k[0] ^ bits.RotateLeft64(k[1], 31)
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	return x
}

func stored(k Key) Key {
	if k == (Key{}) {
		return Key{1, 0}
	}
	return k
}

// find returns the slot of k, or of the empty slot where it would go.
func (s *Set) find(k Key) uint64 {
	mask := uint64(len(s.keys) - 1)
	i := slot(k) & mask
	for s.keys[i] != k && s.keys[i] != (Key{}) {
		i = (i + 1) & mask
	}
	return i
}

// Add inserts k and reports whether it was new.
func (s *Set) Add(k Key) bool {
	k = stored(k)
	if (s.n+1)*4 > len(s.keys)*3 {
		s.grow()
	}
	i := s.find(k)
	if s.keys[i] == k {
		return false
	}
	s.keys[i] = k
	s.n++
	return true
}

// Has reports whether k is in the set.
func (s *Set) Has(k Key) bool {
	k = stored(k)
	return s.keys[s.find(k)] == k
}

// Put records v for k, in the set or not yet.
func (s *Set) Put(k Key, v int32) {
	if s.vals == nil {
		s.valMem, s.vals = offheap.Make[int32](len(s.keys))
	}
	k = stored(k)
	if (s.n+1)*4 > len(s.keys)*3 {
		s.grow()
	}
	i := s.find(k)
	if s.keys[i] != k {
		s.keys[i] = k
		s.n++
	}
	s.vals[i] = v
}

// Get returns the value put for k, if k is in the set (0 for a key added
// without one).
func (s *Set) Get(k Key) (int32, bool) {
	k = stored(k)
	i := s.find(k)
	if s.keys[i] != k {
		return 0, false
	}
	if s.vals == nil {
		return 0, true
	}
	return s.vals[i], true
}

func (s *Set) grow() {
	keys, vals, keyMem, valMem := s.keys, s.vals, s.keyMem, s.valMem
	s.keyMem, s.keys = offheap.Make[Key](2 * len(keys))
	s.n = 0
	if vals != nil {
		s.valMem, s.vals = offheap.Make[int32](2 * len(keys))
	}
	for j, k := range keys {
		if k == (Key{}) {
			continue
		}
		i := s.find(k)
		s.keys[i] = k
		if vals != nil {
			s.vals[i] = vals[j]
		}
		s.n++
	}
	keyMem.Free()
	valMem.Free()
}

// Len is the number of keys in the set.
func (s *Set) Len() int { return s.n }

// Bytes is the memory the set holds: what a memory budget and a report
// count.
func (s *Set) Bytes() int64 { return int64(16*len(s.keys) + 4*len(s.vals)) }
