package search

// The deepest depth of a search bounded by MaxDepth is judged and never
// expanded, and it is the largest (each depth of the reference holds about
// three times the one before). Its states need no parent links (a
// counterexample's path ends at its parent, one depth up), no skip sets
// (no move is taken from them) and no index of the depth's own states
// (which exists to intersect the skip sets of every edge into a state):
// only the visited set's word that they were reached. At 2 events x 2
// workers to depth 14 that is 29 of the 42 million states, 16 bytes of
// link and 20 of index each not held.

// startDepth readies the building of depth d.
func (b *BFS) startDepth(d int) {
	b.last = d == b.MaxDepth
	if !b.last {
		b.next = NewSet()
	}
}

// endDepth lets go of the index of the depth built.
func (b *BFS) endDepth() {
	if b.next != nil {
		b.next.Free()
		b.next = nil
	}
	b.last = false
}

// buildingBytes is the memory of the index of the depth being built.
func (b *BFS) buildingBytes() int64 {
	if b.next == nil {
		return 0
	}
	return b.next.Bytes()
}
