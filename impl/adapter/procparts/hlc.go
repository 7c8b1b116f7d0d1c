package procparts

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/hlc"
)

// HLCs is an implementation of the hlc protocol: one process in which every
// node's clock is a handle. It is safe for concurrent use; requests go one
// at a time.
type HLCs struct {
	c *conn
}

// OpenHLCs starts the implementation and checks that it speaks version 1 of
// the hlc protocol. A command that cannot start, hangs, dies, speaks
// another protocol or answers garbage is reported here, with its stderr.
func OpenHLCs(ctx context.Context, opts Options) (*HLCs, error) {
	c, err := dial(ctx, opts, ProtocolHLC)
	if err != nil {
		return nil, err
	}
	return &HLCs{c: c}, nil
}

// Close ends the process.
func (s *HLCs) Close() error { return s.c.close() }

// Open opens a fresh clock for node, which reads its physical time from
// wall: the signature system.WithHLC takes. The clock's declared max offset
// (its answer's maxOffsetMs) must not be negative.
func (s *HLCs) Open(node string, wall clock.Source) (hlc.Clock, error) {
	h := s.c.newHandle()
	var r response
	if err := s.c.call(context.Background(), OpOpen, map[string]any{"clock": h, "node": node, "physMs": wall.NowMs()}, &r, ""); err != nil {
		return nil, err
	}
	var d hlc.Declaration
	if r.MaxOffsetMs != nil {
		d.MaxOffset = time.Duration(*r.MaxOffsetMs) * time.Millisecond
	}
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("procparts: %s implementation %q declared, opening node %s's clock: %w", ProtocolHLC, s.c.command, node, err)
	}
	return &Clock{s: s, handle: h, node: node, wall: wall, decl: d}, nil
}

// Clock is one node's clock in the implementation's process. It implements
// hlc.Clock, hlc.Declarer, hlc.Failer, hlc.Burster and io.Closer.
type Clock struct {
	s      *HLCs
	handle int64
	node   string
	wall   clock.Source
	decl   hlc.Declaration
	err    error
}

var (
	_ hlc.Clock    = (*Clock)(nil)
	_ hlc.Declarer = (*Clock)(nil)
	_ hlc.Failer   = (*Clock)(nil)
	_ hlc.Burster  = (*Clock)(nil)
)

// Err implements hlc.Failer: the failure of the process, if any.
func (c *Clock) Err() error { return c.err }

// Declaration implements hlc.Declarer: what the implementation declared
// when the clock was opened.
func (c *Clock) Declaration() hlc.Declaration { return c.decl }

func (c *Clock) fields(extra map[string]any) map[string]any {
	f := map[string]any{"clock": c.handle, "physMs": c.wall.NowMs()}
	for k, v := range extra {
		f[k] = v
	}
	return f
}

// Tick implements hlc.Clock. After a failure it returns the zero stamp
// and Err says why.
func (c *Clock) Tick() hlc.Timestamp {
	if c.err != nil {
		return hlc.Timestamp{}
	}
	var r response
	if c.err = c.s.c.call(context.Background(), OpTick, c.fields(nil), &r, ""); c.err != nil {
		return hlc.Timestamp{}
	}
	return *r.Stamp
}

// TickBurst implements hlc.Burster: n ticks at one instant, in one request.
func (c *Clock) TickBurst(n int) []hlc.Timestamp {
	if c.err != nil {
		return nil
	}
	var r response
	if c.err = c.s.c.call(context.Background(), OpBurst, c.fields(map[string]any{"count": n}), &r, ""); c.err != nil {
		return nil
	}
	return r.Stamps
}

// Merge implements hlc.Clock. An answer of kind "refused" is the clock's
// refusal, returned as an error wrapping hlc.ErrRefused; a failure of the
// process is returned too, and Err says it is one.
func (c *Clock) Merge(remote hlc.Timestamp) (hlc.Timestamp, error) {
	if c.err != nil {
		return hlc.Timestamp{}, c.err
	}
	var r response
	err := c.s.c.call(context.Background(), OpMerge, c.fields(map[string]any{"remote": remote}), &r, KindRefused)
	var ref *refusal
	if errors.As(err, &ref) {
		return hlc.Timestamp{}, fmt.Errorf("%w: %s", hlc.ErrRefused, ref.msg)
	}
	if err != nil {
		c.err = err
		return hlc.Timestamp{}, err
	}
	return *r.Stamp, nil
}

// Close tells the implementation the clock is done with, so it may forget
// it. A failed process is not asked.
func (c *Clock) Close() error {
	if c.err != nil {
		return nil
	}
	var r response
	return c.s.c.call(context.Background(), OpClose, map[string]any{"clock": c.handle}, &r, "")
}
