package gen

import (
	"fmt"

	"pgregory.net/rapid"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
)

// LiveOptions shape the live scenarios drawn.
type LiveOptions struct {
	// Restart allows broker restarts in the schedule (only for a broker
	// that can restart, and only when no other run shares it).
	Restart bool
}

// Live draws a scenario for a real broker: a few events (some failing
// transiently, some past max_attempts, some poison), produced once or
// retried by the producer after a gap, and a schedule of consumer crashes
// at each point of the pipeline, nacks, stalls past the ack timeout and,
// if allowed, broker restarts. Timeouts are tens of milliseconds: real
// time moves in a live run.
func Live(o LiveOptions) *rapid.Generator[*scenario.Live] {
	return rapid.Custom(func(t *rapid.T) *scenario.Live {
		backoff := rapid.SampledFrom([]int64{2, 5}).Draw(t, "backoff_ms")
		l := &scenario.Live{
			Version: scenario.Version, Kind: scenario.KindLive, Topic: "orders",
			Consumers: []string{"ledger"},
			Policy: broker.Policy{
				MaxAttempts:  rapid.IntRange(2, 4).Draw(t, "max_attempts"),
				BackoffMs:    backoff,
				MaxBackoffMs: backoff * 4,
				AckTimeoutMs: rapid.SampledFrom([]int64{20, 30}).Draw(t, "ack_timeout_ms"),
			},
		}
		if rapid.IntRange(0, 3).Draw(t, "second_consumer") == 3 {
			l.Consumers = append(l.Consumers, "audit")
		}
		n := rapid.IntRange(1, 3).Draw(t, "events")
		for i := range n {
			e := scenario.Event{ID: fmt.Sprintf("evt-%04d", i+1), Tenant: rapid.SampledFrom([]string{"", "acme"}).Draw(t, "tenant"),
				OrderID: fmt.Sprintf("ord-%d", i+1), UserID: fmt.Sprintf("usr-%d", i%2+1), AmountCents: int64(100 * (i + 1))}
			switch rapid.IntRange(0, 7).Draw(t, "fate") {
			case 5, 6:
				e.Fate = scenario.FateTransient
				// Up to every attempt of every group failing: past
				// max_attempts, the message must reach the DLQ.
				e.Transient = rapid.IntRange(1, l.MaxAttempts*len(l.Consumers)+1).Draw(t, "transient_runs")
			case 7:
				e.Fate = scenario.FatePoison
			}
			l.Events = append(l.Events, e)
		}
		for i := range l.Events {
			l.Steps = append(l.Steps, scenario.LiveStep{Op: scenario.LiveProduce, Event: i})
			if rapid.IntRange(0, 3).Draw(t, "retry") == 3 {
				// A producer retry: at once, or after a gap longer than a
				// short duplicate window.
				gap := rapid.SampledFrom([]int64{0, 250}).Draw(t, "retry_gap_ms")
				l.Steps = append(l.Steps, scenario.LiveStep{Op: scenario.LiveRetry, Event: i, Ms: gap})
			}
		}
		faults := rapid.IntRange(0, 4).Draw(t, "faults")
		for range faults {
			g := rapid.SampledFrom(l.Consumers).Draw(t, "consumer")
			maxOp := 4
			if o.Restart {
				maxOp = 5
			}
			switch rapid.IntRange(0, maxOp).Draw(t, "fault") {
			case 0, 1:
				l.Steps = append(l.Steps, scenario.LiveStep{Op: scenario.LiveCrash, Consumer: g,
					N: rapid.SampledFrom([]int{0, 1, 3}).Draw(t, "crash_point")})
			case 2:
				l.Steps = append(l.Steps, scenario.LiveStep{Op: scenario.LiveNack, Consumer: g})
			case 3:
				l.Steps = append(l.Steps, scenario.LiveStep{Op: scenario.LiveStall, Consumer: g})
			case 4:
				l.Steps = append(l.Steps, scenario.LiveStep{Op: scenario.LiveConsume, Consumer: g, N: rapid.IntRange(1, 3).Draw(t, "consume")})
			case 5:
				l.Steps = append(l.Steps, scenario.LiveStep{Op: scenario.LiveRestart})
			}
		}
		return l
	})
}
