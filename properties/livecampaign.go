package properties

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemcheck/idemcheck/faults/gen"
	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/internal/situation"
)

// LiveStatus is what a campaign found for one invariant.
type LiveStatus string

// The statuses of an invariant after a live campaign.
const (
	// LiveHolds: no run broke it.
	LiveHolds LiveStatus = "holds"
	// LiveFails: a run broke it and a re-run of the same schedule broke it
	// again: a violation.
	LiveFails LiveStatus = "fails"
	// LiveUnconfirmed: a run broke it, but no re-run did. The failure hung
	// on timing the schedule does not fix; it is reported, never as a
	// violation.
	LiveUnconfirmed LiveStatus = "unconfirmed"
)

// ConfirmRuns is how many times a failure is re-run before it is reported.
const ConfirmRuns = 3

// LiveCampaign is a campaign of drawn scenarios against a live broker.
type LiveCampaign struct {
	Factory broker.LiveFactory
	// Parts are the consumer's store and pipeline (nil: the reference).
	Parts *system.Consumption
	// App, when set, makes the application that processes each run's
	// deliveries instead (a team's consumer), fresh for every run.
	App func() (runner.LiveApp, error)
	// Runs is the number of scenarios; Seed the first's seed (scenario i is
	// drawn with seed Seed+i, so the schedules are reproducible).
	Runs int
	Seed int
	// Workers run scenarios in parallel (default 1). Restarts are drawn
	// only with one worker, as a restart stops every run on the broker.
	Workers int
	// Budget stops the campaign early when set.
	Budget     time.Duration
	DrainLimit time.Duration
	// Progress, if set, is called after every run.
	Progress func(done int)

	lateRuns *atomic.Int64 // counts the late runs played, re-runs included
}

// LiveCell is one invariant's result.
type LiveCell struct {
	Invariant string     `json:"invariant"`
	Status    LiveStatus `json:"status"`
	// Detail, Seed and Scenario describe the first failure.
	Detail   string         `json:"detail,omitempty"`
	Seed     int            `json:"seed,omitempty"`
	Scenario *scenario.Live `json:"scenario,omitempty"`
	// Unconfirmed counts failures no re-run reproduced.
	Unconfirmed int `json:"unconfirmed,omitempty"`
	// Trace is the first failing run's history, numbered for a person
	// (runner.LiveHistory.Trace).
	Trace []string `json:"trace,omitempty"`
}

// LiveReport is a campaign's result.
type LiveReport struct {
	Broker     string        `json:"broker"`
	Runs       int           `json:"runs"`
	Deliveries int           `json:"deliveries"`
	Elapsed    time.Duration `json:"elapsed"`
	Cells      []LiveCell    `json:"cells"`
	// Coverage counts the situations the runs reached.
	Coverage map[string]int `json:"coverage"`
	// LateRuns counts the runs, re-runs included, that missed their timing
	// (runner.LiveHistory.Late): played again, never judged violations.
	LateRuns int `json:"lateRuns,omitempty"`
	// MaxLagMs is the longest any run waited past what it asked for.
	MaxLagMs int64 `json:"maxLagMs"`
}

// Cell returns the result of the named invariant.
func (r *LiveReport) Cell(invariant string) LiveCell {
	for _, c := range r.Cells {
		if c.Invariant == invariant {
			return c
		}
	}
	return LiveCell{Invariant: invariant}
}

// RunLiveCampaign draws and runs c.Runs scenarios, judges each history,
// and re-runs every failure up to ConfirmRuns times before it counts. A
// broker that goes down stops the campaign with an error wrapping
// broker.ErrBrokerDown.
func RunLiveCampaign(ctx context.Context, c LiveCampaign) (*LiveReport, error) {
	workers := max(c.Workers, 1)
	g := gen.Live(gen.LiveOptions{Restart: workers == 1 && c.Factory.Caps().Restart})
	rep := &LiveReport{Broker: c.Factory.Name(), Coverage: map[string]int{}}
	for _, name := range LiveInvariants() {
		rep.Cells = append(rep.Cells, LiveCell{Invariant: name, Status: LiveHolds})
	}
	start := time.Now()
	var (
		mu       sync.Mutex
		next     int
		firstErr error
		wg       sync.WaitGroup
	)
	opts := runner.LiveOptions{DrainLimit: c.DrainLimit}
	c.lateRuns = new(atomic.Int64)
	for range workers {
		wg.Go(func() {
			for {
				mu.Lock()
				if next >= c.Runs || firstErr != nil || (c.Budget > 0 && time.Since(start) > c.Budget) || ctx.Err() != nil {
					mu.Unlock()
					return
				}
				seed := c.Seed + next
				next++
				mu.Unlock()
				sc := g.Example(seed)
				open := func(invariant string) bool {
					mu.Lock()
					defer mu.Unlock()
					return rep.Cell(invariant).Status != LiveFails
				}
				h, verdicts, err := runOnTime(ctx, c, sc, opts, open)
				if err != nil {
					mu.Lock()
					firstErr = errors.Join(firstErr, err)
					mu.Unlock()
					return
				}
				confirmed := map[string]bool{}
				for _, v := range verdicts {
					if v.Holds || h.Late != "" {
						continue
					}
					mu.Lock()
					known := rep.Cell(v.Invariant).Status == LiveFails
					mu.Unlock()
					if known {
						continue
					}
					ok, _, err := confirm(ctx, c, sc, v.Invariant, opts)
					if err != nil {
						mu.Lock()
						firstErr = errors.Join(firstErr, err)
						mu.Unlock()
						return
					}
					confirmed[v.Invariant] = ok
				}
				mu.Lock()
				rep.Runs++
				rep.Deliveries += len(h.Deliveries)
				rep.MaxLagMs = max(rep.MaxLagMs, h.LagMs)
				cover(rep.Coverage, h)
				for _, v := range verdicts {
					if v.Holds {
						continue
					}
					i := cellIndex(v.Invariant)
					cell := &rep.Cells[i]
					switch {
					case cell.Status == LiveFails:
					case confirmed[v.Invariant]:
						cell.Status, cell.Detail, cell.Seed, cell.Scenario, cell.Trace = LiveFails, v.Detail, seed, sc, h.Trace()
					default:
						cell.Unconfirmed++
						if cell.Status == LiveHolds {
							detail := v.Detail
							if h.Late != "" {
								detail += " (the run was late: " + h.Late + ")"
							}
							cell.Status, cell.Detail, cell.Seed, cell.Scenario, cell.Trace = LiveUnconfirmed, detail, seed, sc, h.Trace()
						}
					}
				}
				done := rep.Runs
				mu.Unlock()
				if c.Progress != nil {
					c.Progress(done)
				}
			}
		})
	}
	wg.Wait()
	rep.Elapsed = time.Since(start)
	rep.LateRuns = int(c.lateRuns.Load())
	if firstErr != nil {
		return rep, firstErr
	}
	return rep, ctx.Err()
}

func cellIndex(invariant string) int {
	for i, n := range LiveInvariants() {
		if n == invariant {
			return i
		}
	}
	return 0
}

// playLive plays sc once, counting it in c.LateRuns when it is late.
func playLive(ctx context.Context, c LiveCampaign, sc *scenario.Live, opts runner.LiveOptions) (*runner.LiveHistory, error) {
	if c.App != nil {
		app, err := c.App()
		if err != nil {
			return nil, err
		}
		opts.App = app
	}
	h, err := runner.RunLive(ctx, sc, c.Factory, c.Parts, opts)
	if err == nil && h.Late != "" && c.lateRuns != nil {
		c.lateRuns.Add(1)
	}
	return h, err
}

// LateRetries is how many more times a run that missed its timing
// (runner.LiveHistory.Late) is played, looking for one that did not.
const LateRetries = 3

// runOnTime plays sc and judges it. A late run that broke an invariant
// still open (not yet a confirmed failure) is played again, up to
// LateRetries times, until one is on time: what a late run observed is not
// the scenario's timing. It returns the last run.
func runOnTime(ctx context.Context, c LiveCampaign, sc *scenario.Live, opts runner.LiveOptions, open func(invariant string) bool) (*runner.LiveHistory, []LiveVerdict, error) {
	for i := 0; ; i++ {
		h, err := playLive(ctx, c, sc, opts)
		if err != nil {
			return nil, nil, err
		}
		verdicts := JudgeLive(h)
		if h.Late == "" || i == LateRetries || !slices.ContainsFunc(verdicts, func(v LiveVerdict) bool { return !v.Holds && open(v.Invariant) }) {
			return h, verdicts, nil
		}
	}
}

// confirm re-runs sc up to ConfirmRuns times and reports whether one of
// the re-runs broke the invariant again, and how. Only a re-run on time
// can confirm; a late one is played again (up to LateRetries times in
// all), and does not count as one of the ConfirmRuns.
func confirm(ctx context.Context, c LiveCampaign, sc *scenario.Live, invariant string, opts runner.LiveOptions) (bool, string, error) {
	late := 0
	for done := 0; done < ConfirmRuns; {
		h, err := playLive(ctx, c, sc, opts)
		if err != nil {
			return false, "", err
		}
		if h.Late != "" {
			if late++; late > LateRetries {
				return false, "", nil
			}
			continue
		}
		done++
		for _, v := range JudgeLive(h) {
			if v.Invariant == invariant && !v.Holds {
				return true, v.Detail, nil
			}
		}
	}
	return false, "", nil
}

// cover counts the situations a history reached.
func cover(m map[string]int, h *runner.LiveHistory) {
	prev := map[groupOffset]runner.LiveOutcome{}
	for _, d := range h.Deliveries {
		m[situation.LiveDelivery(string(d.Outcome))]++
		// Observed, not the broker's count: some brokers keep none.
		k := groupOffset{d.Consumer, d.Offset}
		if before, seen := prev[k]; seen {
			m[situation.LiveRedelivery]++
			// The broker really brought the message back after the fault.
			m[situation.LiveRedeliveryAfter(string(before))]++
		}
		prev[k] = d.Outcome
	}
	for _, p := range h.Produces {
		if p.Retry {
			m[situation.LiveProducerRetry]++
			if p.Duplicate {
				m[situation.LiveProducerRetryDeduped]++
			}
		}
	}
	for _, st := range h.Scenario.Steps {
		if st.Op == scenario.LiveRestart {
			m[situation.LiveBrokerRestart]++
		}
	}
	m[situation.LiveDLQByBroker] += dlqByBroker(h.DLQ)
	m[situation.LiveDLQPoison] += len(h.DLQ) - dlqByBroker(h.DLQ)
}

// ReplayLive plays a saved live counterexample against c's broker and
// consumer up to ConfirmRuns times on time (late runs are played again, up
// to LateRetries of them, and never count) and returns the first run that
// broke invariant, with what broke, or the last run played and "" when
// none did.
func ReplayLive(ctx context.Context, c LiveCampaign, sc *scenario.Live, invariant string) (*runner.LiveHistory, string, error) {
	var last *runner.LiveHistory
	late := 0
	for done := 0; done < ConfirmRuns; {
		h, err := playLive(ctx, c, sc, runner.LiveOptions{DrainLimit: c.DrainLimit})
		if err != nil {
			return nil, "", err
		}
		last = h
		if h.Late != "" {
			if late++; late > LateRetries {
				break
			}
			continue
		}
		done++
		for _, v := range JudgeLive(h) {
			if v.Invariant == invariant && !v.Holds {
				return h, v.Detail, nil
			}
		}
	}
	return last, "", nil
}
