package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/event"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/reference/consumer"
	"github.com/idemcheck/idemcheck/impl/reference/producer"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/internal/history"
	"github.com/idemcheck/idemcheck/internal/law"
)

// A live run plays a scenario.Live against a real broker in real time and
// records a LiveHistory, which the properties judge afterwards. The drawn
// schedule is reproducible; the broker's timing — when a redelivery comes,
// how deliveries of different messages interleave — is not, which is why a
// failure is re-run before it is reported (properties.CampaignLive).

// LiveOutcome is how one delivery ended.
type LiveOutcome string

// The outcomes of a delivery.
const (
	LiveAcked      LiveOutcome = "ack"
	LiveNacked     LiveOutcome = "nack"
	LiveDeadLetter LiveOutcome = "dead-letter"
	LiveCrashed    LiveOutcome = "crash"
	LiveStalled    LiveOutcome = "stall"
	// LiveDropped: the worker let go of the delivery unsettled (a stale
	// token after a takeover).
	LiveDropped LiveOutcome = "dropped"
	// LiveAckFailed: the ack did not reach the broker.
	LiveAckFailed LiveOutcome = "ack-failed"
)

// The reasons of the failures a live run injects itself: a nack step, the
// scenario's transient failure of the reference consumer's handler, and
// the same injected before a team's handler runs (LiveApp).
const (
	LiveReasonNackStep     = "fault: nack"
	LiveReasonFate         = "transient: downstream timeout"
	LiveReasonFateInjected = "transient: injected before the handler"
)

// LiveInjected reports whether a nack's reason is a failure the run
// injected, not the consumer's own.
func LiveInjected(reason string) bool {
	switch reason {
	case LiveReasonNackStep, LiveReasonFate, LiveReasonFateInjected:
		return true
	}
	return false
}

// LiveProduce is one produce the run made.
type LiveProduce struct {
	Step      int    `json:"step"`
	Event     int    `json:"event"`
	Key       string `json:"key"`
	Retry     bool   `json:"retry,omitempty"`
	Offset    int64  `json:"offset"`
	Duplicate bool   `json:"duplicate,omitempty"`
}

// LiveDeliveryRecord is one delivery and how it ended.
type LiveDeliveryRecord struct {
	// Step is the schedule step, or -1 in the drain.
	Step     int    `json:"step"`
	Consumer string `json:"consumer"`
	Offset   int64  `json:"offset"`
	Key      string `json:"key"`
	Tenant   string `json:"tenant"`
	// Attempts is the broker's own count, as the delivery carried it.
	Attempts int         `json:"attempts"`
	Outcome  LiveOutcome `json:"outcome"`
	Reason   string      `json:"reason,omitempty"`
	// Committed: the effect and the processed mark committed in it.
	Committed bool `json:"committed,omitempty"`
	// AtMs is real time since the start: not reproducible.
	AtMs int64 `json:"atMs"`
}

// LiveHistory is everything a live run observed.
type LiveHistory struct {
	Broker     string               `json:"broker"`
	Scenario   *scenario.Live       `json:"scenario"`
	Produces   []LiveProduce        `json:"produces"`
	Deliveries []LiveDeliveryRecord `json:"deliveries"`
	Ledger     []store.Entry        `json:"ledger"`
	DLQ        []broker.DLQEntry    `json:"dlq"`
	// Quiesced: every message settled and nothing more came for a grace
	// period; false when the drain hit its limit.
	Quiesced bool `json:"quiesced"`
	// Notes say what the run could not do as scheduled (a restart the
	// broker does not support, a step that found no delivery).
	Notes []string `json:"notes,omitempty"`
	// Late says why the run missed its timing, or is "": the process was
	// starved for longer than the ack timeout, or held a delivery past the
	// ack timeout of a broker that enforces one, so the broker's timers ran
	// ahead of the consumer's steps (a loaded machine). What a late run
	// observed is not the scenario's timing; a campaign re-runs it and
	// never counts its failures as violations.
	Late string `json:"late,omitempty"`
	// LagMs is the longest the run waited past what it asked for (a
	// receive that returned late, a sleep that overslept), and HeldMs the
	// longest it held a delivery before settling it (a stall's deliberate
	// wait aside). Not reproducible; they show how loaded the machine was.
	LagMs     int64 `json:"lagMs"`
	HeldMs    int64 `json:"heldMs"`
	ElapsedMs int64 `json:"elapsedMs"`
}

// History converts the live run into the history the shared laws judge
// (package internal/history). A live run has no replay: the dead-letter
// queue once quiet is the final one. A delivery is given up by the
// consumer when it dead-lettered it, or nacked it with a reason the run
// did not inject, but the claim "locked" right after a delivery of the
// same event that a crash, a stall or a takeover left unsettled.
func (h *LiveHistory) History() *history.History {
	out := &history.History{Source: history.Live, Groups: h.Scenario.Consumers, MaxAttempts: h.Scenario.MaxAttempts,
		Quiesced: h.Quiesced, DLQQuiet: h.DLQ, DLQ: h.DLQ, Credits: map[law.GroupKey]int{}}
	produced := map[string]bool{}
	for _, p := range h.Produces {
		produced[p.Key] = true
		origin := broker.Produced
		if p.Duplicate {
			origin = broker.Duplicated
		}
		out.Produces = append(out.Produces, history.Produce{Topic: h.Scenario.Topic, Key: p.Key, Offset: p.Offset, Origin: origin})
	}
	for _, e := range h.Scenario.Events {
		out.Events = append(out.Events, history.Event{ID: e.ID, Poison: e.Fate == scenario.FatePoison, Produced: produced[e.ID]})
	}
	for _, e := range h.Ledger {
		out.Credits[law.GroupKey{Group: e.Consumer, Key: e.EventID}]++
	}
	unsettled := map[law.GroupKey]bool{} // the event's last delivery, "locked" ones aside, was left unsettled
	for i := range h.Deliveries {
		d := &h.Deliveries[i]
		k := law.GroupKey{Group: d.Consumer, Key: d.Key}
		gaveUp := d.Outcome == LiveDeadLetter ||
			(d.Outcome == LiveNacked && !LiveInjected(d.Reason) && (d.Reason != "locked" || !unsettled[k]))
		out.Deliveries = append(out.Deliveries, history.Delivery{Group: d.Consumer, Event: d.Key, Offset: d.Offset, Attempt: d.Attempts,
			Answer: string(d.Outcome), Reason: d.Reason, GaveUp: gaveUp, Account: d})
		switch {
		case d.Outcome == LiveNacked && d.Reason == "locked" && unsettled[k]:
		case d.Outcome == LiveCrashed, d.Outcome == LiveStalled, d.Outcome == LiveDropped, d.Outcome == LiveAckFailed:
			unsettled[k] = true
		default:
			unsettled[k] = false
		}
	}
	return out
}

// String is the delivery's line in a breach's detail.
func (d *LiveDeliveryRecord) String() string {
	reason := ""
	if d.Reason != "" {
		reason = " (" + d.Reason + ")"
	}
	return fmt.Sprintf("%s got %s (offset %d, attempt %d): %s%s", d.Consumer, d.Key, d.Offset, d.Attempts, d.Outcome, reason)
}

// Trace is the history as numbered lines for a person: what was produced,
// each delivery and how it ended, the DLQ and the ledger. Times are real
// and differ from run to run.
func (h *LiveHistory) Trace() []string {
	var out []string
	add := func(format string, args ...any) {
		out = append(out, fmt.Sprintf("%3d. ", len(out)+1)+fmt.Sprintf(format, args...))
	}
	for _, p := range h.Produces {
		what := "produce " + p.Key
		if p.Retry {
			what = "producer retry of " + p.Key
			if p.Step >= 0 && p.Step < len(h.Scenario.Steps) {
				what += fmt.Sprintf(", %dms later", h.Scenario.Steps[p.Step].Ms)
			}
		}
		switch {
		case p.Duplicate:
			add("step %d: %s: dropped by the broker as a duplicate of offset %d", p.Step, what, p.Offset)
		default:
			add("step %d: %s: enqueued at offset %d", p.Step, what, p.Offset)
		}
	}
	for _, d := range h.Deliveries {
		when := fmt.Sprintf("step %d", d.Step)
		if d.Step < 0 {
			when = "drain"
		}
		line := fmt.Sprintf("%s, t=%dms: %s gets %s (offset %d, attempt %d): %s", when, d.AtMs, d.Consumer, d.Key, d.Offset, d.Attempts, d.Outcome)
		if d.Reason != "" {
			line += " (" + d.Reason + ")"
		}
		if d.Committed {
			line += ", effect committed"
		}
		add("%s", line)
	}
	for _, e := range h.DLQ {
		add("DLQ: %s in %s (offset %d), attempts %d, last error %q, poison %v", e.Key, e.Group, e.Offset, e.Attempts, e.LastError, e.Poison)
	}
	for _, e := range h.Ledger {
		add("ledger: %s credited %s", e.Consumer, e.EventID)
	}
	for _, n := range h.Notes {
		add("note: %s", n)
	}
	if !h.Quiesced {
		add("the run did not quiesce within its drain limit")
	}
	if h.Late != "" {
		add("late: %s", h.Late)
	}
	return out
}

// LiveOptions bound a live run.
type LiveOptions struct {
	// DrainLimit bounds the drain in real time (default 3s).
	DrainLimit time.Duration
	// App, when set, processes the deliveries instead of the reference
	// consumer (RunLive's parts are then unused); RunLive closes it.
	App LiveApp
}

type liveGroup struct {
	name    string
	session broker.Session
	worker  *consumer.Worker
	app     LiveAppGroup // instead of worker, with LiveOptions.App
}

type liveRun struct {
	ctx     context.Context
	sc      *scenario.Live
	live    broker.Live
	caps    broker.LiveCaps
	policy  broker.Policy
	truth   *clock.Virtual
	start   time.Time
	st      store.Store
	groups  map[string]*liveGroup
	order   []*liveGroup
	runs    map[string]int
	events  map[string]int
	h       *LiveHistory
	step    int
	pending map[int64]broker.LiveDelivery // delivery id -> live delivery
	nextID  int64
	cur     *LiveDeliveryRecord
	stall   bool
	slept   time.Duration // a stall's deliberate wait in the delivery in hand
	err     error         // a broker-down error: the run stops
	app     LiveApp
}

// RunLive plays sc against a broker from f, with the consumer parts (the
// store and the pipeline) of target; nil target parts mean the reference.
func RunLive(ctx context.Context, sc *scenario.Live, f broker.LiveFactory, parts *system.Consumption, opts LiveOptions) (*LiveHistory, error) {
	if opts.App != nil {
		defer opts.App.Close()
	}
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("runner: live scenario: %w", err)
	}
	if parts == nil {
		parts = system.Reference().Consumption
	}
	if opts.DrainLimit <= 0 {
		opts.DrainLimit = 3 * time.Second
	}
	policy := sc.Policy
	durable := slices.ContainsFunc(sc.Steps, func(st scenario.LiveStep) bool { return st.Op == scenario.LiveRestart })
	live, err := f.Open(ctx, broker.LiveSpec{Topic: sc.Topic, Groups: sc.Consumers, Policy: policy, Durable: durable})
	if err != nil {
		return nil, fmt.Errorf("runner: open %s: %w", f.Name(), err)
	}
	defer live.Close()
	truth := clock.NewVirtual(StartMs)
	st, err := parts.NewStore(truth)
	if err != nil {
		return nil, fmt.Errorf("runner: open store: %w", err)
	}
	defer func() {
		if c, ok := st.(store.Closer); ok {
			_ = c.Close()
		}
	}()
	st = parts.Conventions.Canonical(st)
	r := &liveRun{ctx: ctx, sc: sc, live: live, caps: f.Caps(), policy: policy, truth: truth, start: time.Now(), st: st,
		groups: map[string]*liveGroup{}, runs: map[string]int{}, events: map[string]int{}, pending: map[int64]broker.LiveDelivery{},
		h: &LiveHistory{Broker: f.Name(), Scenario: sc}}
	for i, e := range sc.Events {
		r.events[e.ID] = i
	}
	// The lease is no longer than the backoff and the ack timeout, as a
	// correct deployment keeps it: a redelivery after a crash finds the
	// crashed holder's lease expired.
	lease := min(sc.BackoffMs, sc.AckTimeoutMs)
	prod := &producer.Producer{Gate: producer.NewGate(), Broker: liveBridge{r}}
	r.app = opts.App
	defer func() {
		for _, g := range r.order {
			_ = g.session.Close()
		}
	}()
	for _, g := range sc.Consumers {
		s, err := live.Session(ctx, g)
		if err != nil {
			return nil, fmt.Errorf("runner: session %s: %w", g, err)
		}
		if r.app != nil {
			ag, err := r.app.Group(ctx, g)
			if err != nil {
				_ = s.Close()
				return nil, fmt.Errorf("runner: consumer of %s: %w", g, err)
			}
			lg := &liveGroup{name: g, session: s, app: ag}
			r.groups[g] = lg
			r.order = append(r.order, lg)
			continue
		}
		node := clock.NewNode("n-"+g, truth, 0)
		deps := consumer.Deps{Store: st, Broker: liveBridge{r}, Producer: prod, Node: node, Handler: r.handler}
		lg := &liveGroup{name: g, session: s,
			worker: consumer.NewWorker(consumer.Config{Name: "w-" + g, Consumer: g, LeaseMs: lease}, deps, parts.Pipeline())}
		r.groups[g] = lg
		r.order = append(r.order, lg)
	}
	for i, stp := range sc.Steps {
		r.step = i
		r.apply(stp)
		if r.err != nil {
			return nil, r.err
		}
	}
	r.step = -1
	r.drain(opts.DrainLimit)
	if r.err != nil {
		return nil, r.err
	}
	if r.h.DLQ, err = live.DLQ(ctx); err != nil {
		return nil, fmt.Errorf("runner: read the DLQ: %w", err)
	}
	if r.app != nil {
		if r.h.Ledger, err = r.appLedger(); err != nil {
			return nil, err
		}
	} else if r.h.Ledger, err = st.Ledger(ctx); err != nil {
		return nil, fmt.Errorf("runner: read the ledger: %w", err)
	}
	r.h.ElapsedMs = time.Since(r.start).Milliseconds()
	return r.h, nil
}

func (r *liveRun) now() int64 { return time.Since(r.start).Milliseconds() }

// lateSlack is how far past the ack timeout the process may be starved,
// or hold a delivery, before the run counts as late: the broker's timer and
// the consumer's step then no longer come in the scenario's order.
func (r *liveRun) lateSlack() time.Duration {
	return time.Duration(r.sc.AckTimeoutMs) * time.Millisecond
}

// lag records that a wait asked for asked returned after took.
func (r *liveRun) lag(asked, took time.Duration) {
	over := (took - asked).Milliseconds()
	if over > r.h.LagMs {
		r.h.LagMs = over
	}
	// In the schedule a starved step reorders the consumer's actions and
	// the broker's ack timers. In the drain, which only collects, the run
	// waits for the broker with budgets of hundreds of milliseconds (the
	// quiet period, the DLQ's routing): a stall matters when it eats half
	// of the DLQ wait. A delivery held too long is late anywhere (held).
	slack, what := r.lateSlack(), fmt.Sprintf("the %dms ack timeout", r.sc.AckTimeoutMs)
	if r.step < 0 {
		slack, what = dlqWait/2, fmt.Sprintf("half the drain's %s DLQ wait", dlqWait)
	}
	if took-asked > slack && r.h.Late == "" {
		r.h.Late = fmt.Sprintf("step %d: a wait of %s took %s: the process was starved past %s",
			r.step, asked, took.Round(time.Millisecond), what)
	}
}

// held records that a delivery was held for took before it was settled
// (or the consumer crashed); past the ack timeout of a broker that has
// one, the broker may already have redelivered it or routed it to the DLQ.
func (r *liveRun) held(key string, took time.Duration) {
	if ms := took.Milliseconds(); ms > r.h.HeldMs {
		r.h.HeldMs = ms
	}
	if r.caps.AckTimeout && took > r.lateSlack() && r.h.Late == "" {
		r.h.Late = fmt.Sprintf("step %d: a delivery of %s was held %s, past the %dms ack timeout",
			r.step, key, took.Round(time.Millisecond), r.sc.AckTimeoutMs)
	}
}

// sleep sleeps d and records how late it woke.
func (r *liveRun) sleep(d time.Duration) {
	t0 := time.Now()
	time.Sleep(d)
	r.lag(d, time.Since(t0))
}

// sync moves the store's clock to real elapsed time.
func (r *liveRun) sync() {
	if d := StartMs + r.now() - r.truth.NowMs(); d > 0 {
		r.truth.Advance(d)
	}
}

func (r *liveRun) notef(format string, args ...any) {
	r.h.Notes = append(r.h.Notes, fmt.Sprintf("step %d: ", r.step)+fmt.Sprintf(format, args...))
}

// fail keeps the first broker-down error; others become notes.
func (r *liveRun) fail(what string, err error) {
	if err == nil {
		return
	}
	if errors.Is(err, broker.ErrBrokerDown) || errors.Is(err, context.Canceled) {
		if r.err == nil {
			r.err = fmt.Errorf("runner: %s: %w", what, err)
		}
		return
	}
	r.notef("%s: %v", what, err)
}

// stepWait is how long a schedule step waits for a delivery: long enough
// for a redelivery after an ack timeout and the longest backoff.
func (r *liveRun) stepWait() time.Duration {
	return time.Duration(2*(r.sc.AckTimeoutMs+r.sc.MaxBackoffMs)+20) * time.Millisecond
}

func (r *liveRun) apply(st scenario.LiveStep) {
	switch st.Op {
	case scenario.LiveProduce:
		r.produce(st.Event, false)
	case scenario.LiveRetry:
		r.sleep(time.Duration(st.Ms) * time.Millisecond)
		r.produce(st.Event, true)
	case scenario.LiveConsume:
		for range st.N {
			if !r.take(r.groups[st.Consumer], -1, false, r.stepWait()) || r.err != nil {
				break
			}
		}
	case scenario.LiveCrash:
		r.take(r.groups[st.Consumer], st.N, false, r.stepWait())
	case scenario.LiveStall:
		r.take(r.groups[st.Consumer], -1, true, r.stepWait())
	case scenario.LiveNack:
		r.nackNext(r.groups[st.Consumer])
	case scenario.LiveRestart:
		rs, ok := r.live.(broker.Restarter)
		if !ok || !r.caps.Restart {
			r.notef("restart: %s cannot restart; skipped", r.h.Broker)
			return
		}
		r.fail("restart", rs.Restart(r.ctx))
	}
}

func (r *liveRun) produce(i int, retry bool) {
	ev := r.sc.Events[i]
	if r.app != nil && ev.Fate == scenario.FatePoison {
		// A team's handler is not told to fail: a poison event is one it
		// must reject, an amount of at most zero.
		ev.AmountCents = -ev.AmountCents
	}
	payload := event.OrderPaid{EventID: ev.ID, OccurredAtMs: StartMs + r.now(), Tenant: ev.Tenant, OrderID: ev.OrderID, UserID: ev.UserID, AmountCents: ev.AmountCents}.Encode()
	res, err := r.live.Produce(r.ctx, ev.Tenant, ev.ID, payload)
	if err != nil {
		r.fail("produce "+ev.ID, err)
		return
	}
	r.h.Produces = append(r.h.Produces, LiveProduce{Step: r.step, Event: i, Key: ev.ID, Retry: retry, Offset: res.Offset, Duplicate: res.Duplicate})
}

func (r *liveRun) next(g *liveGroup, wait time.Duration) (broker.LiveDelivery, bool) {
	t0 := time.Now()
	d, ok, err := g.session.Next(r.ctx, wait)
	if took := time.Since(t0); took > wait {
		r.lag(wait, took)
	}
	if err != nil {
		r.fail("next "+g.name, err)
		return broker.LiveDelivery{}, false
	}
	return d, ok
}

func (r *liveRun) record(g *liveGroup, d broker.LiveDelivery) *LiveDeliveryRecord {
	m := d.Message
	r.h.Deliveries = append(r.h.Deliveries, LiveDeliveryRecord{Step: r.step, Consumer: g.name, Offset: m.Offset, Key: m.Key,
		Tenant: m.Tenant, Attempts: m.Attempts, AtMs: r.now()})
	return &r.h.Deliveries[len(r.h.Deliveries)-1]
}

// take gets g's next delivery and runs it through the worker: all the way
// (crashAfter < 0), or crashAfter pipeline steps and then a crash; a stall
// runs it to the ack and drops the ack. It reports whether a delivery came.
func (r *liveRun) take(g *liveGroup, crashAfter int, stall bool, wait time.Duration) bool {
	d, ok := r.next(g, wait)
	if !ok {
		if r.err == nil && r.step >= 0 {
			r.notef("%s: no delivery came within %s", g.name, wait)
		}
		return false
	}
	rec := r.record(g, d)
	t0 := time.Now()
	r.slept = 0
	defer func() { r.held(d.Message.Key, time.Since(t0)-r.slept) }()
	if g.app != nil {
		r.appTake(g, d, rec, crashAfter, stall)
		return true
	}
	r.nextID++
	id := r.nextID
	r.pending[id] = d
	defer delete(r.pending, id)
	r.cur, r.stall = rec, stall
	defer func() { r.cur, r.stall = nil, false }()
	if err := g.worker.Receive(broker.Delivery{ID: id, Message: d.Message}); err != nil {
		r.fail("receive", err)
		return true
	}
	for steps := 0; !g.worker.Idle(); steps++ {
		if crashAfter >= 0 && steps == crashAfter {
			r.crash(g)
			return true
		}
		r.sync()
		rep, err := g.worker.Step(r.ctx)
		if (rep.Action == consumer.ActCommit || rep.Action == consumer.ActEffect) && err == nil && !rep.Stale {
			rec.Committed = true
		}
		if err != nil && !rep.Stale {
			r.notef("%s %s: %v", g.name, rep.Action, err)
		}
		if r.err != nil {
			return true
		}
	}
	if crashAfter >= 0 {
		r.notef("%s: the delivery settled before the crash point", g.name)
	}
	if rec.Outcome == "" {
		rec.Outcome = LiveDropped
	}
	return true
}

// crash closes g's connection without an ack and reconnects.
func (r *liveRun) crash(g *liveGroup) {
	r.cur.Outcome = LiveCrashed
	g.worker.Crash(r.ctx)
	_ = g.session.Close()
	s, err := r.live.Session(r.ctx, g.name)
	if err != nil {
		r.fail("reconnect "+g.name, err)
		return
	}
	g.session = s
}

func (r *liveRun) nackNext(g *liveGroup) {
	d, ok := r.next(g, r.stepWait())
	if !ok {
		if r.err == nil {
			r.notef("%s: no delivery came to nack", g.name)
		}
		return
	}
	rec := r.record(g, d)
	rec.Outcome, rec.Reason = LiveNacked, LiveReasonNackStep
	r.fail("nack", g.session.Nack(r.ctx, d, r.backoff(d), rec.Reason))
}

func (r *liveRun) backoff(d broker.LiveDelivery) time.Duration {
	return time.Duration(r.policy.Backoff(max(d.Message.Attempts, 1))) * time.Millisecond
}

// handler is the application code, failing as the event's fate says.
func (r *liveRun) handler(tx store.Tx, consumerName string, ev event.OrderPaid) consumer.Result {
	return creditByFate(r.sc.Events, r.events, r.runs, tx, consumerName, ev)
}

// drain runs every group's worker until every produced message is settled
// in every group and nothing more comes for a grace period, or the limit.
func (r *liveRun) drain(limit time.Duration) {
	deadline := time.Now().Add(limit)
	grace := time.Duration(r.sc.AckTimeoutMs+r.sc.MaxBackoffMs+20) * time.Millisecond
	// A stalled or crashed delivery comes back after its ack timeout plus
	// the backoff; allow for it before calling the run quiet.
	quietSince := time.Now()
	for time.Now().Before(deadline) && r.err == nil {
		got := false
		for _, g := range r.order {
			if r.take(g, -1, false, 5*time.Millisecond) {
				got = true
			}
			if r.err != nil {
				return
			}
		}
		if got {
			quietSince = time.Now()
			if r.runaway() {
				r.notef("drain stopped: a message kept coming back past every failure the schedule can cause")
				return
			}
			continue
		}
		if r.settled() && time.Since(quietSince) >= grace {
			// A broker's DLQ routing may lag the last delivery (an advisory
			// on its way): give it a while before calling the run quiet.
			if time.Since(quietSince) < grace+dlqWait && r.dlqPending() {
				continue
			}
			r.h.Quiesced = true
			return
		}
	}
}

// dlqWait bounds how long a quiet run waits for spent messages to reach
// the DLQ.
const dlqWait = 500 * time.Millisecond

// dlqPending reports whether a message spent its attempts in a group and
// is not in the DLQ yet.
func (r *liveRun) dlqPending() bool {
	if !r.caps.DeliveryLimit {
		return false // only the consumer dead-letters, and it has
	}
	dlq, err := r.live.DLQ(r.ctx)
	if err != nil {
		r.fail("read the DLQ", err)
		return false
	}
	in := map[string]bool{}
	for _, e := range dlq {
		in[fmt.Sprintf("%s/%d", e.Group, e.Offset)] = true
	}
	last := map[string]LiveDeliveryRecord{}
	n := map[string]int{}
	for _, d := range r.h.Deliveries {
		k := fmt.Sprintf("%s/%d", d.Consumer, d.Offset)
		last[k] = d
		n[k]++
	}
	for k, d := range last {
		spent := max(n[k], d.Attempts) >= r.sc.MaxAttempts
		if spent && d.Outcome != LiveAcked && d.Outcome != LiveDeadLetter && !in[k] {
			return true
		}
	}
	return false
}

// runaway reports a message delivered far past max_attempts: the broker
// does not bound redelivery, and draining further shows nothing new. On a
// broker with no delivery limit, far means past every failure the
// schedule can cause: then the message is not stuck, the consumer can
// settle it, and the run waits for that.
func (r *liveRun) runaway() bool {
	limit := r.sc.MaxAttempts + 3
	if !r.caps.DeliveryLimit {
		limit = r.sc.MaxAttempts*len(r.sc.Consumers) + len(r.sc.Steps) + 3
	}
	n := map[string]int{}
	for _, d := range r.h.Deliveries {
		k := fmt.Sprintf("%s/%d", d.Consumer, d.Offset)
		n[k]++
		if n[k] > limit {
			return true
		}
	}
	return false
}

// settled reports whether every message produced has, in every group,
// been acked or dead-lettered by its consumer, or spent its attempts on a
// broker with a delivery limit (one without it delivers the message
// again, however late).
func (r *liveRun) settled() bool {
	type k struct {
		g   string
		off int64
	}
	last := map[k]LiveDeliveryRecord{}
	count := map[k]int{}
	for _, d := range r.h.Deliveries {
		last[k{d.Consumer, d.Offset}] = d
		count[k{d.Consumer, d.Offset}]++
	}
	for _, p := range r.h.Produces {
		if p.Duplicate {
			continue
		}
		for _, g := range r.sc.Consumers {
			d, ok := last[k{g, p.Offset}]
			switch {
			case !ok:
				return false
			case d.Outcome == LiveAcked || d.Outcome == LiveDeadLetter:
			case r.caps.DeliveryLimit && max(count[k{g, p.Offset}], d.Attempts) >= r.sc.MaxAttempts:
			default:
				return false
			}
		}
	}
	return true
}

// liveBridge is the broker the reference worker sees: its ack, nack and
// dead-letter go to the live session of the delivery in hand.
type liveBridge struct{ r *liveRun }

var _ broker.Broker = liveBridge{}

func (b liveBridge) session(d broker.Delivery) (*liveGroup, broker.LiveDelivery, bool) {
	ld, ok := b.r.pending[d.ID]
	if !ok {
		return nil, broker.LiveDelivery{}, false
	}
	return b.r.groups[d.Message.Group], ld, true
}

// Policy implements broker.Broker.
func (b liveBridge) Policy() broker.Policy { return b.r.policy }

// Ack implements broker.Broker; a stall drops it.
func (b liveBridge) Ack(d broker.Delivery) {
	g, ld, ok := b.session(d)
	if !ok {
		return
	}
	if b.r.stall {
		b.r.cur.Outcome = LiveStalled
		if !b.r.caps.AckTimeout {
			// The broker has no ack timeout of its own: a consumer-side
			// watchdog ends the stalled delivery by reconnecting.
			t0 := time.Now()
			b.r.sleep(time.Duration(b.r.sc.AckTimeoutMs) * time.Millisecond)
			b.r.slept += time.Since(t0)
			b.r.crash(g)
			b.r.cur.Outcome = LiveStalled
		}
		return
	}
	if err := g.session.Ack(b.r.ctx, ld); err != nil {
		if b.r.cur.Outcome == "" {
			b.r.cur.Outcome, b.r.cur.Reason = LiveAckFailed, err.Error()
		}
		b.r.fail("ack", err)
		return
	}
	if b.r.cur.Outcome == "" {
		b.r.cur.Outcome = LiveAcked
	}
}

// Nack implements broker.Broker with the policy's backoff as the delay.
func (b liveBridge) Nack(d broker.Delivery, reason string) {
	g, ld, ok := b.session(d)
	if !ok {
		return
	}
	b.r.cur.Outcome, b.r.cur.Reason = LiveNacked, reason
	b.r.fail("nack", g.session.Nack(b.r.ctx, ld, b.r.backoff(ld), reason))
}

// DeadLetter implements broker.Broker: the consumer's own DLQ publish.
func (b liveBridge) DeadLetter(d broker.Delivery, reason string) {
	g, ld, ok := b.session(d)
	if !ok {
		return
	}
	b.r.cur.Outcome, b.r.cur.Reason = LiveDeadLetter, reason
	b.r.fail("dead-letter", g.session.DeadLetter(b.r.ctx, ld, reason))
}

// The rest of broker.Broker is the runner's to drive, not the worker's.

// Enqueue implements broker.Broker; a worker never calls it.
func (liveBridge) Enqueue(string, string, string, []byte, broker.Origin) int64 { return -1 }

// Duplicate implements broker.Broker; a worker never calls it.
func (liveBridge) Duplicate(string, int64, int) ([]int64, error) {
	return nil, errors.New("live runs do not duplicate through the worker")
}

// Replay implements broker.Broker; a worker never calls it.
func (liveBridge) Replay(string) []int64 { return nil }

// Deliver implements broker.Broker; a worker never calls it.
func (liveBridge) Deliver(string, int) (broker.Delivery, bool) { return broker.Delivery{}, false }

// Tick implements broker.Broker; the live broker keeps its own time.
func (liveBridge) Tick() {}

// Quiet implements broker.Broker; a worker never calls it.
func (liveBridge) Quiet() (bool, int64) { return true, 0 }

// DLQ implements broker.Broker; a worker never calls it.
func (liveBridge) DLQ() []broker.DLQEntry { return nil }

// Messages implements broker.Broker; a worker never calls it.
func (liveBridge) Messages() []broker.MessageState { return nil }
