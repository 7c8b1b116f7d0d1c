package explore

import (
	"os"

	"github.com/idemcheck/idemcheck/internal/offheap"
)

// A frontier past its memory limit (Options.FrontierMemory) goes to disk a
// chunk at a time: it is written once, as the depth is built, and read
// once, in order, as it is expanded, which a file serves well; what the
// process holds is the visited set, the parent links and a few chunks.

// spillFile is a temporary file of spilled chunks, removed when closed
// (at once where the system lets an open file be removed).
type spillFile struct {
	f       *os.File
	off     map[int]int64 // a chunk's offset in the file
	size    map[int]int   // and its length
	written int64
}

// spillLast writes the last chunk, which is full, to the file and lets it
// go. A frontier that cannot be written keeps the chunk in memory: the
// search goes on, and the memory budget stops it if it must.
func (p *packedStates) spillLast() {
	c := len(p.chunks) - 1
	if p.disk == nil {
		f, err := os.CreateTemp("", "idemcheck-frontier-*")
		if err != nil {
			p.limit = 0
			return
		}
		_ = os.Remove(f.Name()) // unlinked: gone with the process, whatever happens
		p.disk = &spillFile{f: f, off: map[int]int64{}, size: map[int]int{}}
	}
	if _, err := p.disk.f.WriteAt(p.cur, p.disk.written); err != nil {
		p.limit = 0
		return
	}
	p.disk.off[c], p.disk.size[c] = p.disk.written, len(p.cur)
	p.disk.written += int64(len(p.cur))
	p.chunks[c].Free()
	p.chunks[c] = nil
	p.inMem -= int64(p.chunk)
}

// read reads chunk c back into a new block.
func (d *spillFile) read(c, size int) (*offheap.Block, error) {
	blk := offheap.New(size)
	if _, err := d.f.ReadAt(blk.Bytes()[:d.size[c]], d.off[c]); err != nil {
		blk.Free()
		return nil, err
	}
	return blk, nil
}

func (d *spillFile) close() {
	if d == nil {
		return
	}
	_ = d.f.Close()
	_ = os.Remove(d.f.Name())
}
