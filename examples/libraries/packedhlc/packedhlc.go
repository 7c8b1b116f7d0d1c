// Package packedhlc is a library-shaped example: a Hybrid Logical Clock
// whose stamps are one uint64, the high 48 bits of a nanosecond wall and a
// 16-bit counter, as several libraries pack them. It knows nothing of
// idemcheck; its test checks it through idemcheck's public API only.
//
// The low 16 bits of the wall are dropped by design, so a stamp lags the
// physical clock by up to 65 µs. Version 1 (NewV1) let the counter wrap
// within its 16 bits; New carries it into the wall.
package packedhlc

// Clock is one node's clock.
type Clock struct {
	now   func() int64
	last  uint64
	wraps bool
}

const counterMask = 0xFFFF

// New returns a clock over now (nanoseconds since the epoch).
func New(now func() int64) *Clock { return &Clock{now: now} }

// NewV1 is the clock as version 1 shipped it.
func NewV1(now func() int64) *Clock { return &Clock{now: now, wraps: true} }

// Now stamps a local event.
func (c *Clock) Now() uint64 {
	c.last = c.next(c.last)
	return c.last
}

// Update stamps the receipt of remote.
func (c *Clock) Update(remote uint64) (uint64, error) {
	c.last = c.next(max(c.last, remote))
	return c.last, nil
}

func (c *Clock) next(after uint64) uint64 {
	phys := uint64(c.now()) &^ counterMask
	switch {
	case phys > after:
		return phys
	case c.wraps:
		return after&^counterMask | (after+1)&counterMask
	}
	return after + 1
}
