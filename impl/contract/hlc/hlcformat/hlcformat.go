// Package hlcformat adapts HLC libraries whose stamps are not the
// contract's (wallMs, logical) pair to hlc.Clock, so that each is judged by
// the laws that apply to its format:
//
//   - Nanos: a wall in nanoseconds and a logical counter. Every law applies,
//     at nanosecond precision.
//   - Packed: one 64-bit integer, a wall in its high bits and a logical
//     counter in its low bits. The wall's unit and width are the library's:
//     Packed.WallUnit and Packed.WallBits say them. The zero values are the
//     layout of Pack, the high 48 bits of a nanosecond wall (a wall unit of
//     65,536 ns, its low 16 bits dropped by design) over a 16-bit counter; a
//     millisecond wall shifted above a 16-bit counter is
//     Packed{WallUnit: time.Millisecond, WallBits: 48}, a microsecond one
//     WallUnit: time.Microsecond. A stamp may lag the physical clock by less
//     than one wall unit without breaking physical-bound (the adapter
//     declares the unit as the wall's granularity); monotonic,
//     merge-dominates and causality apply to the packed integer as it is,
//     which is what shows a counter that wraps into the wall going
//     backwards. Read in the wrong unit a stamp is nonsense: a millisecond
//     wall read as nanoseconds is a wall in 1970, far behind the physical
//     clock, and physical-bound fires at the first reading.
//
// A library reads its physical time from the function WallNs (or WallMs)
// gives it, over the node's skewed wall clock, so the harness's virtual time
// drives it.
//
// # A clock of another shape
//
// A library whose stamps fit neither adapter implements hlc.Clock itself and
// declares what the laws must know by implementing hlc.Declarer: its max
// offset, and how coarse its wall is by design.
//
//	type myClock struct{ lib *mylib.Clock; node string }
//
//	func (c *myClock) Tick() hlc.Timestamp { ... }
//	func (c *myClock) Merge(remote hlc.Timestamp) (hlc.Timestamp, error) { ... }
//	func (c *myClock) Declaration() hlc.Declaration {
//		return hlc.Declaration{MaxOffset: 500 * time.Millisecond, WallGranularity: time.Second}
//	}
package hlcformat

import (
	"fmt"
	"math"
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

// WallMs returns the node's wall clock in milliseconds since the epoch, the
// physical clock to give a millisecond library.
func WallMs(wall clock.Source) func() int64 { return wall.NowMs }

// CounterBits is the width of the logical counter in Pack's layout; the
// wall takes the other 48 bits.
const CounterBits = 16

// CounterMask selects the counter of a stamp in Pack's layout.
const CounterMask = 1<<CounterBits - 1

// Granularity is how coarse the wall of Pack's layout is: the dropped low
// bits of a nanosecond wall, 65,536 ns.
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

// Packed is a library clock whose stamps are packed 64-bit integers, given
// as its two operations and its layout.
type Packed struct {
	// Tick stamps a local or send event.
	Tick func() uint64
	// Merge stamps the receipt of a remote stamp, or refuses it.
	Merge func(remote uint64) (uint64, error)
	// MergeFrom, when set, is used instead of Merge: for a library whose
	// wire carries the sender's node beside the stamp (to break ties, or
	// to track peers), it is given the remote stamp's node as well.
	MergeFrom func(remote uint64, node string) (uint64, error)
	// MaxOffset is the library's max-offset guard (0: it never refuses).
	MaxOffset time.Duration
	// WallUnit is what one step of the packed wall is worth:
	// time.Millisecond, time.Microsecond, time.Nanosecond, or any positive
	// duration the library declares as its granularity. Zero is Pack's
	// layout: 65,536 ns, the high 48 bits of a nanosecond wall.
	WallUnit time.Duration
	// WallBits is the wall's width in bits, 1 to 63; the counter takes the
	// low 64-WallBits bits. Zero is 48.
	WallBits int
}

// layout is a packed stamp's shape: the wall's unit and the counter's
// width.
type layout struct {
	unit        time.Duration
	counterBits uint
}

func (l layout) mask() uint64 { return 1<<l.counterBits - 1 }

// unpack splits p into its wall in nanoseconds and its counter.
func (l layout) unpack(p uint64) (wallNs int64, counter uint64) {
	return int64(p>>l.counterBits) * int64(l.unit), p & l.mask()
}

// pack packs a nanosecond wall (rounded down to the unit) and a counter
// (capped at the counter's width).
func (l layout) pack(wallNs int64, counter uint64) uint64 {
	return uint64(floorDiv(wallNs, int64(l.unit)))<<l.counterBits | min(counter, l.mask())
}

// NewPacked adapts a packed clock of node. Its stamps are shown in the
// wall's own unit — millisecond stamps for a wall of whole milliseconds,
// nanosecond stamps otherwise — with the counter as logical, so they order
// exactly as the packed integers do.
func NewPacked(node string, p Packed) (hlc.Clock, error) {
	switch {
	case p.Tick == nil || (p.Merge == nil && p.MergeFrom == nil):
		return nil, fmt.Errorf("hlcformat: Packed for node %s needs Tick and Merge (or MergeFrom)", node)
	case p.MaxOffset < 0:
		return nil, fmt.Errorf("hlcformat: Packed for node %s: max offset %v is negative; use 0 for a clock that never refuses", node, p.MaxOffset)
	case p.WallUnit < 0:
		return nil, fmt.Errorf("hlcformat: Packed for node %s: wall unit %v is negative; give the duration of one step of the packed wall (time.Millisecond for a millisecond wall)", node, p.WallUnit)
	case p.WallBits < 0 || p.WallBits > 63:
		return nil, fmt.Errorf("hlcformat: Packed for node %s: wall width %d bits is outside 1..63", node, p.WallBits)
	}
	l := layout{unit: Granularity * time.Nanosecond, counterBits: CounterBits}
	if p.WallUnit > 0 {
		l.unit = p.WallUnit
	}
	if p.WallBits > 0 {
		l.counterBits = uint(64 - p.WallBits)
	}
	return &packed{node: node, p: p, l: l}, nil
}

type packed struct {
	node string
	p    Packed
	l    layout
}

func (c *packed) Tick() hlc.Timestamp { return c.stamp(c.p.Tick()) }

func (c *packed) Merge(remote hlc.Timestamp) (hlc.Timestamp, error) {
	wire := c.l.pack(wallNsOf(remote), uint64(remote.Logical))
	var got uint64
	var err error
	if c.p.MergeFrom != nil {
		got, err = c.p.MergeFrom(wire, remote.Node)
	} else {
		got, err = c.p.Merge(wire)
	}
	if err != nil {
		return hlc.Timestamp{}, err
	}
	return c.stamp(got), nil
}

func (c *packed) Declaration() hlc.Declaration {
	return hlc.Declaration{MaxOffset: c.p.MaxOffset, WallGranularity: c.l.unit}
}

// stamp is the contract's stamp of the packed p: a millisecond stamp when
// the wall counts whole milliseconds, a nanosecond one otherwise.
func (c *packed) stamp(p uint64) hlc.Timestamp {
	ns, counter := c.l.unpack(p)
	logical := uint32(min(counter, math.MaxUint32))
	if c.l.unit%time.Millisecond == 0 {
		return hlc.Timestamp{WallMs: ns / int64(time.Millisecond), Logical: logical, Node: c.node}
	}
	return fromNs(c.node, ns, logical)
}
