package offheap

import (
	"runtime"
	"unsafe"
)

// Min is the smallest block mapped from the system: smaller ones are Go
// allocations, cheaper to make and no burden on the collector.
const Min = 1 << 20

// Block is a zeroed span of memory of a fixed size. A block that was
// mapped is unmapped by Free, or, if Free is never called, once the block
// is unreachable (a cleanup), so a forgotten one leaks nothing for long.
type Block struct {
	b       []byte
	mapped  bool
	cleanup runtime.Cleanup
}

// New returns a zeroed block of n bytes.
func New(n int) *Block {
	if n >= Min {
		if b, err := mmap(n); err == nil {
			blk := &Block{b: b, mapped: true}
			blk.cleanup = runtime.AddCleanup(blk, func(b []byte) { _ = munmap(b) }, b)
			return blk
		}
		// No mapping (no such system call, or the system refused): the
		// Go heap it is, which is correct, only costlier.
	}
	return &Block{b: make([]byte, n)}
}

// Bytes is the block's memory; it must not be used after Free.
func (b *Block) Bytes() []byte { return b.b }

// Len is the block's size in bytes.
func (b *Block) Len() int { return len(b.b) }

// Free gives the block's memory back to the system at once. The block
// and every slice of it must not be used afterwards; Free of a freed
// block, or of nil, does nothing.
func (b *Block) Free() {
	if b == nil || b.b == nil {
		return
	}
	if b.mapped {
		b.cleanup.Stop()
		_ = munmap(b.b)
	}
	b.b = nil
}

// Slice returns n values of T over b's memory, which must hold them.
// T must hold no pointers: the collector does not see this memory, and a
// pointer kept only there would not keep what it points to alive.
func Slice[T any](b *Block, n int) []T {
	if n == 0 {
		return nil
	}
	var zero T
	if uintptr(n)*unsafe.Sizeof(zero) > uintptr(len(b.b)) {
		panic("offheap: block too small")
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b.b))), n)
}

// Make returns a block holding n zeroed values of T (which must hold no
// pointers) and the slice of them.
func Make[T any](n int) (*Block, []T) {
	var zero T
	b := New(n * int(unsafe.Sizeof(zero)))
	return b, Slice[T](b, n)
}
