// Package hlcformat adapts HLC libraries whose stamps are not the
// contract's (wallMs, logical) pair to hlc.Clock, so that each is judged by
// the laws that apply to its format:
//
//   - Nanos: a wall in nanoseconds and a logical counter. Every law applies,
//     at nanosecond precision.
//   - Packed: one 64-bit integer whose high 48 bits are the high bits of a
//     nanosecond wall and whose low 16 bits are the logical counter — the
//     low 16 bits of the wall are dropped by design. The stamp may lag the
//     physical clock by up to 65,535 ns without breaking physical-bound (the
//     adapter declares that granularity); monotonic, merge-dominates and
//     causality apply to the packed integer as they are, which is what shows
//     a counter that wraps into the wall going backwards.
//
// A library reads its physical time from the function WallNs gives it, over
// the node's skewed wall clock, so the harness's virtual time drives it.
package hlcformat

import (
	"fmt"
	"time"

	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/hlc"
)

// WallNs returns the node's wall clock as nanoseconds since the epoch, the
// physical clock to give a nanosecond library. The harness's clocks tick in
// milliseconds, so every reading is a whole millisecond.
func WallNs(wall clock.Source) func() int64 {
	return func() int64 { return wall.NowMs() * int64(time.Millisecond) }
}

// Nanos is a library clock whose stamps are a nanosecond wall and a logical
// counter, given as its two operations.
type Nanos struct {
	// Tick stamps a local or send event.
	Tick func() (wallNs int64, logical uint32)
	// Merge stamps the receipt of a remote stamp, or refuses it.
	Merge func(wallNs int64, logical uint32) (int64, uint32, error)
	// MaxOffset is the library's max-offset guard (0: it never refuses).
	MaxOffset time.Duration
}

// NewNanos adapts a nanosecond clock of node.
func NewNanos(node string, n Nanos) (hlc.Clock, error) {
	switch {
	case n.Tick == nil || n.Merge == nil:
		return nil, fmt.Errorf("hlcformat: Nanos for node %s needs Tick and Merge", node)
	case n.MaxOffset < 0:
		return nil, fmt.Errorf("hlcformat: Nanos for node %s: max offset %v is negative; use 0 for a clock that never refuses", node, n.MaxOffset)
	}
	return &nanos{node: node, n: n}, nil
}

type nanos struct {
	node string
	n    Nanos
}

func (c *nanos) Tick() hlc.Timestamp {
	ns, l := c.n.Tick()
	return fromNs(c.node, ns, l)
}

func (c *nanos) Merge(remote hlc.Timestamp) (hlc.Timestamp, error) {
	ns, l, err := c.n.Merge(wallNsOf(remote), remote.Logical)
	if err != nil {
		return hlc.Timestamp{}, err
	}
	return fromNs(c.node, ns, l), nil
}

func (c *nanos) Declaration() hlc.Declaration { return hlc.Declaration{MaxOffset: c.n.MaxOffset} }

// fromNs is the contract's stamp of a nanosecond wall.
func fromNs(node string, wallNs int64, logical uint32) hlc.Timestamp {
	return hlc.Timestamp{WallMs: floorDiv(wallNs, int64(time.Millisecond)), WallNs: wallNs, Logical: logical, Node: node}
}

// wallNsOf is a stamp's wall in nanoseconds, whichever unit it carries.
func wallNsOf(t hlc.Timestamp) int64 {
	if t.WallNs != 0 {
		return t.WallNs
	}
	return t.WallMs * int64(time.Millisecond)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// CounterBits is the width of a packed stamp's logical counter; the wall
// takes the other 48 bits.
const CounterBits = 16

// CounterMask selects a packed stamp's counter.
const CounterMask = 1<<CounterBits - 1

// Granularity is how coarse a packed stamp's wall is: the dropped low bits.
const Granularity = CounterMask + 1

// Pack packs a nanosecond wall and a counter: the wall's low 16 bits are
// dropped and the counter takes their place.
func Pack(wallNs int64, counter uint16) uint64 {
	return uint64(wallNs)&^CounterMask | uint64(counter)
}

// Unpack splits a packed stamp into its (truncated) nanosecond wall and its
// counter.
func Unpack(p uint64) (wallNs int64, counter uint16) {
	return int64(p &^ CounterMask), uint16(p & CounterMask)
}

// Packed is a library clock whose stamps are packed 64-bit integers (see
// Pack), given as its two operations.
type Packed struct {
	// Tick stamps a local or send event.
	Tick func() uint64
	// Merge stamps the receipt of a remote stamp, or refuses it.
	Merge func(remote uint64) (uint64, error)
	// MaxOffset is the library's max-offset guard (0: it never refuses).
	MaxOffset time.Duration
}

// NewPacked adapts a packed clock of node. Its stamps are shown as
// nanosecond stamps of the truncated wall, with the counter as logical, so
// they order exactly as the packed integers do.
func NewPacked(node string, p Packed) (hlc.Clock, error) {
	switch {
	case p.Tick == nil || p.Merge == nil:
		return nil, fmt.Errorf("hlcformat: Packed for node %s needs Tick and Merge", node)
	case p.MaxOffset < 0:
		return nil, fmt.Errorf("hlcformat: Packed for node %s: max offset %v is negative; use 0 for a clock that never refuses", node, p.MaxOffset)
	}
	return &packed{node: node, p: p}, nil
}

type packed struct {
	node string
	p    Packed
}

func (c *packed) Tick() hlc.Timestamp { return fromPacked(c.node, c.p.Tick()) }

func (c *packed) Merge(remote hlc.Timestamp) (hlc.Timestamp, error) {
	got, err := c.p.Merge(Pack(wallNsOf(remote), uint16(min(remote.Logical, CounterMask))))
	if err != nil {
		return hlc.Timestamp{}, err
	}
	return fromPacked(c.node, got), nil
}

func (c *packed) Declaration() hlc.Declaration {
	return hlc.Declaration{MaxOffset: c.p.MaxOffset, WallGranularity: Granularity * time.Nanosecond}
}

func fromPacked(node string, p uint64) hlc.Timestamp {
	ns, counter := Unpack(p)
	return fromNs(node, ns, uint32(counter))
}
