package properties_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/properties"
)

// memLive is a small in-memory live broker for testing the campaign's
// handling of time: it bounds attempts and dead-letters like a correct
// broker, but drops no repeated produce (so a producer retry breaks the
// producer gate, whatever the timing). When late says so, the first
// receive of a run returns long after it was asked to, as on a starved
// machine.
type memLive struct {
	late  func(run int64) bool
	runs  atomic.Int64
	lates atomic.Int64
}

func (f *memLive) Name() string { return "mem:test" }

func (f *memLive) Caps() broker.LiveCaps { return broker.LiveCaps{DeliveryLimit: true} }

func (f *memLive) Close() error { return nil }

func (f *memLive) Open(_ context.Context, spec broker.LiveSpec) (broker.Live, error) {
	n := f.runs.Add(1)
	r := &memRun{spec: spec, queues: map[string][]*memMsg{}, late: f.late != nil && f.late(n), f: f}
	return r, nil
}

type memMsg struct {
	msg      broker.Message
	attempts int
	inFlight bool
}

type memRun struct {
	f      *memLive
	spec   broker.LiveSpec
	mu     sync.Mutex
	offset int64
	queues map[string][]*memMsg
	dlq    []broker.DLQEntry
	late   bool
}

func (r *memRun) Produce(_ context.Context, tenant, key string, payload []byte) (broker.ProduceResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.offset++
	for _, g := range r.spec.Groups {
		r.queues[g] = append(r.queues[g], &memMsg{msg: broker.Message{Topic: r.spec.Topic, Offset: r.offset, Group: g,
			Tenant: tenant, Key: key, Payload: payload, Origin: broker.Produced}})
	}
	return broker.ProduceResult{Offset: r.offset}, nil
}

func (r *memRun) Session(_ context.Context, group string) (broker.Session, error) {
	return &memSession{r: r, group: group}, nil
}

func (r *memRun) DLQ(context.Context) ([]broker.DLQEntry, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.dlq), nil
}

func (r *memRun) Close() error { return nil }

// settle ends m's delivery: acked, or requeued unless its attempts are
// spent, when it goes to the DLQ with reason.
func (r *memRun) settle(m *memMsg, ack bool, reason string) {
	m.inFlight = false
	q := r.queues[m.msg.Group]
	if !ack && m.attempts < r.spec.Policy.MaxAttempts {
		return
	}
	r.queues[m.msg.Group] = slices.DeleteFunc(q, func(x *memMsg) bool { return x == m })
	if !ack {
		r.dlq = append(r.dlq, broker.DLQEntry{Topic: m.msg.Topic, Offset: m.msg.Offset, Group: m.msg.Group,
			Attempts: m.attempts, LastError: reason, Tenant: m.msg.Tenant, Key: m.msg.Key})
	}
}

type memSession struct {
	r     *memRun
	held  []*memMsg
	group string
}

func (s *memSession) Next(_ context.Context, wait time.Duration) (broker.LiveDelivery, bool, error) {
	r := s.r
	r.mu.Lock()
	if r.late {
		r.late = false
		r.f.lates.Add(1)
		r.mu.Unlock()
		time.Sleep(wait + 300*time.Millisecond)
		r.mu.Lock()
	}
	defer r.mu.Unlock()
	for _, m := range r.queues[s.group] {
		if m.inFlight {
			continue
		}
		m.inFlight = true
		m.attempts++
		s.held = append(s.held, m)
		d := m.msg
		d.Attempts = m.attempts
		return broker.LiveDelivery{Message: d, Ref: m}, true, nil
	}
	return broker.LiveDelivery{}, false, nil
}

func (s *memSession) Ack(_ context.Context, d broker.LiveDelivery) error {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	s.r.settle(d.Ref.(*memMsg), true, "")
	return nil
}

func (s *memSession) Nack(_ context.Context, d broker.LiveDelivery, _ time.Duration, reason string) error {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	s.r.settle(d.Ref.(*memMsg), false, reason)
	return nil
}

func (s *memSession) DeadLetter(_ context.Context, d broker.LiveDelivery, reason string) error {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	m := d.Message
	s.r.dlq = append(s.r.dlq, broker.DLQEntry{Topic: m.Topic, Offset: m.Offset, Group: m.Group, Attempts: m.Attempts,
		LastError: reason, Tenant: m.Tenant, Key: m.Key, Poison: true})
	return nil
}

// Close is a crash: what the session holds unsettled is delivered again,
// or dead-lettered with ack_timeout when its attempts are spent.
func (s *memSession) Close() error {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	for _, m := range s.held {
		if m.inFlight {
			s.r.settle(m, false, "ack_timeout")
		}
	}
	s.held = nil
	return nil
}

func memCampaign(t *testing.T, f *memLive) *properties.LiveReport {
	t.Helper()
	rep, err := properties.RunLiveCampaign(t.Context(), properties.LiveCampaign{Factory: f, Runs: 8, Seed: 1, Workers: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d runs in %s, %d late (longest lag %dms)", rep.Runs, rep.Elapsed, rep.LateRuns, rep.MaxLagMs)
	return rep
}

// TestLiveLateRunsAreNeverViolations: a run that misses its timing (the
// process starved past the ack timeout) is played again; when no run
// keeps its timing, what broke is reported unconfirmed, never a violation.
// The same campaign on time confirms the failure, and one whose first
// play of each run is late confirms it through the runs played again.
func TestLiveLateRunsAreNeverViolations(t *testing.T) {
	onTime := memCampaign(t, &memLive{})
	if c := onTime.Cell(properties.LiveProducerGate); c.Status == properties.LiveUnconfirmed && onTime.LateRuns > 0 {
		t.Skipf("this machine is too loaded for any run to keep its timing (%d late runs)", onTime.LateRuns)
	}
	if c := onTime.Cell(properties.LiveProducerGate); c.Status != properties.LiveFails {
		t.Fatalf("on time: producer-gate %s, want a confirmed failure (a broker that drops no repeat)", c.Status)
	}
	for _, c := range onTime.Cells {
		if c.Invariant != properties.LiveProducerGate && c.Status != properties.LiveHolds {
			t.Errorf("on time: %s %s: %s", c.Invariant, c.Status, c.Detail)
		}
	}

	always := &memLive{late: func(int64) bool { return true }}
	rep := memCampaign(t, always)
	for _, c := range rep.Cells {
		if c.Status == properties.LiveFails {
			t.Errorf("every run late: %s reported as a violation: %s", c.Invariant, c.Detail)
		}
	}
	if c := rep.Cell(properties.LiveProducerGate); c.Status != properties.LiveUnconfirmed || c.Unconfirmed == 0 {
		t.Errorf("every run late: producer-gate %s (%d unconfirmed), want unconfirmed", c.Status, c.Unconfirmed)
	}
	if rep.LateRuns == 0 || rep.MaxLagMs < 250 {
		t.Errorf("every run late: %d late runs, longest lag %dms", rep.LateRuns, rep.MaxLagMs)
	}

	firstLate := &memLive{}
	firstLate.late = func(n int64) bool { return n%2 == 1 }
	rep = memCampaign(t, firstLate)
	if c := rep.Cell(properties.LiveProducerGate); c.Status != properties.LiveFails && rep.LateRuns <= 2*rep.Runs {
		t.Errorf("every other run late: producer-gate %s, want it confirmed by the runs on time", c.Status)
	}
}
