// Package clock holds the harness's time sources. Nothing in the harness reads
// the machine's clock: every time comes from a Virtual clock that only a
// scenario step moves, so the same scenario always sees the same times.
//
// All times are integers of milliseconds, the unit the domain speaks in
// (occurredAtMs, wallMs, backoff_ms), which also keeps traces and JSON exact.
package clock

import "sync/atomic"

// Source is anything that tells the time in milliseconds.
type Source interface {
	NowMs() int64
}

// Virtual is the true time of a simulated world. It never goes backwards and
// moves only when Advance is called. It is safe for concurrent use so the
// linearizability stress tests can share one.
type Virtual struct {
	now atomic.Int64
}

// NewVirtual returns a virtual clock reading startMs.
func NewVirtual(startMs int64) *Virtual {
	v := &Virtual{}
	v.now.Store(startMs)
	return v
}

// NowMs returns the current true time.
func (v *Virtual) NowMs() int64 { return v.now.Load() }

// Advance moves true time forward by d milliseconds; a negative d is ignored
// because true time cannot run backwards (use Node.Step for a wall-clock step).
func (v *Virtual) Advance(d int64) {
	if d > 0 {
		v.now.Add(d)
	}
}

// Clone returns an independent clock at the same instant, for a search that
// forks a run.
func (v *Virtual) Clone() *Virtual { return NewVirtual(v.NowMs()) }

// CloneOn returns a copy of n (its skew and monotonic origin) over another
// true clock, for a search that forks a run.
func (n *Node) CloneOn(truth *Virtual) *Node {
	c := &Node{name: n.name, truth: truth, origin: n.origin}
	c.offset.Store(n.offset.Load())
	return c
}

// Node is one machine's wall clock: true time plus an offset. The offset is the
// node's skew; Step changes it, which is how an NTP step backwards is simulated.
// Monotonic is the node's monotonic clock, which no skew or step affects, and is
// what durations must be measured with.
type Node struct {
	name   string
	truth  *Virtual
	offset atomic.Int64
	origin int64
}

// NewNode returns a wall clock for the named node over true time, skewed by
// skewMs (positive: ahead).
func NewNode(name string, truth *Virtual, skewMs int64) *Node {
	n := &Node{name: name, truth: truth, origin: truth.NowMs()}
	n.offset.Store(skewMs)
	return n
}

// Name returns the node's name.
func (n *Node) Name() string { return n.name }

// NowMs returns the node's wall-clock reading: true time plus its offset.
func (n *Node) NowMs() int64 { return n.truth.NowMs() + n.offset.Load() }

// SkewMs returns the node's current offset from true time.
func (n *Node) SkewMs() int64 { return n.offset.Load() }

// SetSkew sets the node's offset from true time.
func (n *Node) SetSkew(ms int64) { n.offset.Store(ms) }

// Step jumps the wall clock by d milliseconds (negative: backwards), as an
// NTP step does. The monotonic clock is not affected.
func (n *Node) Step(d int64) { n.offset.Add(d) }

// MonotonicMs returns milliseconds elapsed on this node since it was created,
// unaffected by skew and steps.
func (n *Node) MonotonicMs() int64 { return n.truth.NowMs() - n.origin }
