package mutant

import (
	"github.com/idemcheck/idemcheck/impl/contract/hlc/hlcformat"
)

// PackedCounterWraps is a packed 48+16-bit HLC (the shape of
// impl/reference/packedclock) whose 16-bit counter wraps to zero instead of
// carrying into the wall: the 65,537th event within one truncated wall value
// gets a stamp smaller than the one before. It is the packed format's real
// bug, which a physical-bound false alarm on the dropped wall bits used to
// hide.
type PackedCounterWraps struct {
	nowNs func() int64
	last  uint64
}

// NewPackedCounterWraps returns the broken clock over the physical clock
// nowNs.
func NewPackedCounterWraps(nowNs func() int64) *PackedCounterWraps {
	return &PackedCounterWraps{nowNs: nowNs}
}

// Now stamps a local event.
func (c *PackedCounterWraps) Now() uint64 {
	c.last = c.after(c.last, hlcformat.Pack(c.nowNs(), 0))
	return c.last
}

// Update stamps the receipt of remote.
func (c *PackedCounterWraps) Update(remote uint64) (uint64, error) {
	c.last = c.after(max(c.last, remote), hlcformat.Pack(c.nowNs(), 0))
	return c.last, nil
}

// after is the bug: the counter is incremented within its 16 bits, so at
// 0xFFFF it wraps to 0 and the wall stays.
func (c *PackedCounterWraps) after(last, phys uint64) uint64 {
	if phys > last {
		return phys
	}
	wall, counter := hlcformat.Unpack(last)
	return hlcformat.Pack(wall, counter+1)
}
