package explore

import (
	"fmt"

	"github.com/idemcheck/idemcheck/internal/offheap"
)

// packedStates is a depth's packed states (compact.State.Pack), in the
// order they were kept, copied into large chunks mapped outside the Go
// heap (package offheap): each costs its bytes and an 8-byte position,
// with no slice header for the collector to trace and no heap goal of
// twice the frontier. The depth-13 frontier of 2 events x 2 workers is
// 9.3 million states, 1.7 GB.
//
// Past limit bytes in memory (0: no limit) each chunk filled is written
// to a temporary file and let go (spill.go); the frontier is read in
// order, a batch at a time (load), so a chunk is read back once, when the
// expansion reaches it, and let go once it has passed.
type packedStates struct {
	chunks []*offheap.Block // nil: on disk, or let go
	cur    []byte           // the last chunk: its states so far (len) and its room (cap)
	at     []uint64         // a state's chunk, start and length: see position
	bytes  int64

	limit int64 // bytes of chunks in memory past which chunks are spilled
	inMem int64 // bytes of chunks in memory
	disk  *spillFile
	chunk int // the size of a chunk
}

// frontierChunk is the size of a chunk (a variable for the tests, which
// spill small frontiers); a state's start within its chunk and its length
// must fit position's fields.
var frontierChunk = 16 << 20

// newPackedStates returns an empty frontier that spills past limit bytes
// (0: never).
func newPackedStates(limit int64) *packedStates {
	return &packedStates{limit: limit, chunk: frontierChunk}
}

// position packs where a state is: its chunk (24 bits), its start in the
// chunk (24 bits), its length (16 bits).
func position(chunk, start, n int) uint64 {
	return uint64(chunk)<<40 | uint64(start)<<16 | uint64(n)
}

func chunkOf(at uint64) int { return int(at >> 40) }

// add copies the packed state b in.
func (p *packedStates) add(b []byte) {
	if len(b) >= 1<<16 {
		panic("explore: a packed state of 64 KiB or more")
	}
	if cap(p.cur)-len(p.cur) < len(b) {
		if len(p.chunks) > 0 && p.limit > 0 && p.inMem >= p.limit {
			p.spillLast()
		}
		blk := offheap.New(p.chunk)
		p.chunks = append(p.chunks, blk)
		p.cur = blk.Bytes()[:0]
		p.inMem += int64(p.chunk)
	}
	p.at = append(p.at, position(len(p.chunks)-1, len(p.cur), len(b)))
	p.cur = append(p.cur, b...)
	p.bytes += int64(len(b))
}

// load readies states lo..hi-1 for get, reading back the chunks spilled,
// and lets go of the chunks of the states before lo, which the expansion
// has passed: it is called, in order, before each batch is expanded.
func (p *packedStates) load(lo, hi int) error {
	if lo >= hi {
		return nil
	}
	first, last := chunkOf(p.at[lo]), chunkOf(p.at[hi-1])
	for c := 0; c < first; c++ {
		if p.chunks[c] != nil {
			p.chunks[c].Free()
			p.chunks[c] = nil
			p.inMem -= int64(p.chunk)
		}
	}
	for c := first; c <= last; c++ {
		if p.chunks[c] != nil {
			continue
		}
		blk, err := p.disk.read(c, p.chunk)
		if err != nil {
			return fmt.Errorf("explore: reading the frontier back from disk: %w", err)
		}
		p.chunks[c] = blk
		p.inMem += int64(p.chunk)
	}
	return nil
}

// get returns state i, which load readied; it is valid until the next
// load or free.
func (p *packedStates) get(i int) []byte {
	at := p.at[i]
	start, n := int(at>>16&(1<<24-1)), int(at&(1<<16-1))
	return p.chunks[chunkOf(at)].Bytes()[start : start+n : start+n]
}

// len is the number of states.
func (p *packedStates) len() int { return len(p.at) }

// spilled is the bytes of chunks written to disk.
func (p *packedStates) spilled() int64 {
	if p.disk == nil {
		return 0
	}
	return p.disk.written
}

// free gives the chunks and the file back; p holds no state afterwards.
func (p *packedStates) free() {
	for _, c := range p.chunks {
		c.Free()
	}
	p.disk.close()
	*p = packedStates{}
}
