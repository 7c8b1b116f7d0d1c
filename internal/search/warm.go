package search

// A visited set of tens of millions of slots misses the cache on almost
// every lookup, and a state's transitions are looked up one after the
// other: each miss waits for the one before. Warm loads the slot of each
// of a batch of keys first, loads that depend on none other, so that the
// processor overlaps their misses; the lookups that follow find their
// slots cached.

// Warm touches the slots where ks would be, and returns a sum of what it
// read, which the caller keeps so that the loads are not optimized away.
// It may run beside Has and Get.
func (s *Set) Warm(ks []Key) uint64 {
	mask := uint64(len(s.keys) - 1)
	var sum uint64
	for _, k := range ks {
		sum += s.keys[slot(stored(k))&mask][0]
	}
	return sum
}

// Warm readies the lookups of Known for ks: the visited set's slots and,
// below the deepest depth, the index of the depth being built.
func (b *BFS) Warm(ks []Key) uint64 {
	sum := b.Visited.Warm(ks)
	if b.next != nil && !b.last {
		sum += b.next.Warm(ks)
	}
	return sum
}
