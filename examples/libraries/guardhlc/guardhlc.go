// Package guardhlc is a library-shaped example: a nanosecond Hybrid Logical
// Clock with a max-offset guard, in the style of CockroachDB's clock, as a
// team might publish it. It knows nothing of idemcheck; its test checks it
// through idemcheck's public API only.
//
// Version 1 (NewV1) shipped with a guard that measured the offset either
// way, so it also refused messages that were merely late; New is the fix.
package guardhlc

import (
	"errors"
	"fmt"
	"time"
)

// ErrUntrustedRemote is returned for a remote stamp too far ahead.
var ErrUntrustedRemote = errors.New("guardhlc: remote clock too far ahead")

// Clock is one node's clock.
type Clock struct {
	now       func() int64
	maxOffset int64
	wall      int64
	logical   uint32
	symmetric bool
}

// New returns a clock over now (nanoseconds since the epoch) that refuses
// stamps more than maxOffset ahead of now.
func New(now func() int64, maxOffset time.Duration) (*Clock, error) {
	if maxOffset < 0 {
		return nil, fmt.Errorf("guardhlc: negative max offset %v", maxOffset)
	}
	return &Clock{now: now, maxOffset: int64(maxOffset)}, nil
}

// NewV1 is the clock as version 1 shipped it.
func NewV1(now func() int64, maxOffset time.Duration) (*Clock, error) {
	c, err := New(now, maxOffset)
	if c != nil {
		c.symmetric = true
	}
	return c, err
}

// Now stamps a local event.
func (c *Clock) Now() (int64, uint32) {
	if pt := c.now(); pt > c.wall {
		c.wall, c.logical = pt, 0
	} else {
		c.logical++
	}
	return c.wall, c.logical
}

// Update stamps the receipt of a remote stamp.
func (c *Clock) Update(wall int64, logical uint32) (int64, uint32, error) {
	pt := c.now()
	d := wall - pt
	if c.symmetric && d < 0 {
		d = -d
	}
	if c.maxOffset > 0 && d > c.maxOffset {
		return 0, 0, fmt.Errorf("%w: by %v", ErrUntrustedRemote, time.Duration(d))
	}
	switch {
	case pt > c.wall && pt > wall:
		c.wall, c.logical = pt, 0
	case wall > c.wall:
		c.wall, c.logical = wall, logical+1
	case wall == c.wall:
		c.logical = max(c.logical, logical) + 1
	default:
		c.logical++
	}
	return c.wall, c.logical, nil
}
