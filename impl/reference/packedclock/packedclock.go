// Package packedclock is a correct Hybrid Logical Clock in the packed 64-bit
// format many libraries use: the high 48 bits of a nanosecond wall and a
// 16-bit counter in the low bits (hlcformat.Pack). It is shaped as such a
// library is — it reads physical time from a function and stamps integers —
// and is checked through hlcformat.NewPacked.
//
// Its one subtlety is the counter's overflow: 65,536 events within one
// truncated wall value must carry into the wall, not wrap to zero. On the
// packed integer, carrying is simply adding one.
package packedclock

import (
	"fmt"
	"time"

	"github.com/idemcheck/idemcheck/impl/contract/hlc"
	"github.com/idemcheck/idemcheck/impl/contract/hlc/hlcformat"
)

// Clock is one node's packed HLC. It is not safe for concurrent use.
type Clock struct {
	nowNs     func() int64
	maxOffset time.Duration
	last      uint64
}

// Options tune a Clock.
type Options struct {
	// MaxOffset refuses (hlc.ErrRefused) a remote stamp whose wall is more
	// than MaxOffset ahead of the physical clock. Zero never refuses.
	MaxOffset time.Duration
}

// New returns a clock over the physical clock nowNs (nanoseconds since the
// epoch); a negative max offset is an error.
func New(nowNs func() int64, opts Options) (*Clock, error) {
	if opts.MaxOffset < 0 {
		return nil, fmt.Errorf("packedclock: max offset %v is negative; use 0 for a clock that never refuses", opts.MaxOffset)
	}
	return &Clock{nowNs: nowNs, maxOffset: opts.MaxOffset}, nil
}

// Now stamps a local or send event: the physical time (truncated, counter
// zero) if it moved past the last stamp, otherwise the last stamp plus one,
// which carries a full counter into the wall.
func (c *Clock) Now() uint64 {
	c.last = max(hlcformat.Pack(c.nowNs(), 0), c.last+1)
	return c.last
}

// Update stamps the receipt of remote: later than the last stamp, than
// remote and than physical time; or refuses remote beyond the max offset.
func (c *Clock) Update(remote uint64) (uint64, error) {
	now := c.nowNs()
	if remoteNs, _ := hlcformat.Unpack(remote); c.maxOffset > 0 && time.Duration(remoteNs-now) > c.maxOffset {
		return 0, fmt.Errorf("%w: remote wall %dns is %v ahead, max offset %v", hlc.ErrRefused, remoteNs, time.Duration(remoteNs-now), c.maxOffset)
	}
	c.last = max(hlcformat.Pack(now, 0), c.last+1, remote+1)
	return c.last, nil
}

// MaxOffset returns the configured max offset.
func (c *Clock) MaxOffset() time.Duration { return c.maxOffset }
