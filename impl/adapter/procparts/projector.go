package procparts

import (
	"cmp"
	"context"
	"slices"

	"github.com/idemcheck/idemcheck/impl/contract/projector"
)

// Projectors is an implementation of the projector protocol: one process
// in which every projector the harness opens is a handle. It is safe for
// concurrent use; requests go one at a time.
type Projectors struct {
	c *conn
}

// OpenProjectors starts the implementation and checks that it speaks
// version 1 of the projector protocol. A command that cannot start, hangs,
// dies, speaks another protocol or answers garbage is reported here, with
// its stderr.
func OpenProjectors(ctx context.Context, opts Options) (*Projectors, error) {
	c, err := dial(ctx, opts, ProtocolProjector)
	if err != nil {
		return nil, err
	}
	return &Projectors{c: c}, nil
}

// Close ends the process.
func (s *Projectors) Close() error { return s.c.close() }

// New opens a fresh, empty projector: the signature a
// system.NamedProjector takes. A failure to open is reported by the
// projector's Err.
func (s *Projectors) New() projector.Projector {
	p := &Projector{s: s, handle: s.c.newHandle()}
	var r response
	p.err = s.c.call(context.Background(), OpOpen, map[string]any{"projector": p.handle}, &r, "")
	return p
}

// Projector is one projector in the implementation's process. It
// implements projector.Projector, projector.Failer and io.Closer.
type Projector struct {
	s      *Projectors
	handle int64
	err    error
}

var (
	_ projector.Projector = (*Projector)(nil)
	_ projector.Failer    = (*Projector)(nil)
)

// Err implements projector.Failer: the failure of the process, if any.
func (p *Projector) Err() error { return p.err }

// Apply implements projector.Projector. After a failure it applies
// nothing and Err says why.
func (p *Projector) Apply(e projector.Event) projector.Decision {
	if p.err != nil {
		return projector.Decision{Reason: "the projector's process failed"}
	}
	var r response
	if p.err = p.s.c.call(context.Background(), OpApply, map[string]any{"projector": p.handle, "event": e}, &r, ""); p.err != nil {
		return projector.Decision{Reason: "the projector's process failed"}
	}
	return projector.Decision{Applied: *r.Applied, Reason: r.Reason}
}

// Orders implements projector.Projector, sorted by order id whatever order
// the implementation lists them in.
func (p *Projector) Orders() []projector.OrderState {
	if p.err != nil {
		return nil
	}
	var r response
	if p.err = p.s.c.call(context.Background(), OpState, map[string]any{"projector": p.handle}, &r, ""); p.err != nil {
		return nil
	}
	out := *r.Orders
	slices.SortFunc(out, func(a, b projector.OrderState) int { return cmp.Compare(a.OrderID, b.OrderID) })
	return out
}

// Close tells the implementation the projector is done with, so it may
// forget it. A failed process is not asked.
func (p *Projector) Close() error {
	if p.err != nil {
		return nil
	}
	var r response
	return p.s.c.call(context.Background(), OpClose, map[string]any{"projector": p.handle}, &r, "")
}
