package report

import (
	"fmt"

	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// expiries tracks leases and unacknowledged deliveries, so that a clock
// advance can say which leases and ack timeouts it let run out. They are
// computed from the scenario's config (leaseMs, ackTimeoutMs), which is what
// a correct store and broker honour; a mutant that ignores them shows it in
// the rows that follow.
type expiries struct {
	leaseMs, ackMs int64
	leases         []lease
	inflight       []delivery
}

type lease struct {
	worker string
	key    store.Key
	token  uint64
	until  int64
}

type delivery struct {
	worker string
	id     string
	offset int64
	until  int64
}

func (e *expiries) claimed(a runner.Action) {
	e.leases = append(e.leases, lease{worker: a.Worker, key: a.Key, token: a.Claim.Token, until: a.AtMs + e.leaseMs})
}

// settled ends the lease a commit, mark or release was made under.
func (e *expiries) settled(a runner.Action) {
	e.leases = filter(e.leases, func(l lease) bool { return !(l.key == a.Key && l.token == a.Token) })
}

func (e *expiries) delivered(a runner.Action) {
	e.inflight = append(e.inflight, delivery{worker: a.Worker, id: a.Key.ID, offset: a.Offset, until: a.AtMs + e.ackMs})
}

// answered ends the delivery an ack, nack or dead-letter settled.
func (e *expiries) answered(a runner.Action) {
	e.inflight = filter(e.inflight, func(d delivery) bool { return !(d.worker == a.Worker && d.offset == a.Offset) })
}

// expire lists the leases and ack timeouts that run out in (from, to].
func (e *expiries) expire(from, to int64) []string {
	var out []string
	e.leases = filter(e.leases, func(l lease) bool {
		if l.until > from && l.until <= to {
			out = append(out, fmt.Sprintf("lease of %s on %s (token %d) runs out", l.worker, l.key.ID, l.token))
			return false
		}
		return l.until > to
	})
	e.inflight = filter(e.inflight, func(d delivery) bool {
		if d.until > from && d.until <= to {
			out = append(out, fmt.Sprintf("ack timeout: %s's delivery of %s (offset %d)", d.worker, d.id, d.offset))
			return false
		}
		return d.until > to
	})
	return out
}

func filter[T any](s []T, keep func(T) bool) []T {
	out := s[:0]
	for _, x := range s {
		if keep(x) {
			out = append(out, x)
		}
	}
	return out
}
