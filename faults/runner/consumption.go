package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/event"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/reference/consumer"
	"github.com/idemcheck/idemcheck/impl/reference/producer"
	"github.com/idemcheck/idemcheck/impl/system"
)

// StartMs is the true time every run starts at (2023-11-14T22:13:20Z): a
// fixed, realistic epoch so traces are stable.
const StartMs int64 = 1_700_000_000_000

// DrainLimit bounds the actions the drain may take before it declares that
// the system does not quiesce.
const DrainLimit = 4000

// World is one consumption run in progress: a target's parts assembled over
// a virtual clock and driven one schedule step at a time. It only observes —
// every action is recorded as structured data and shown to the observers —
// and never judges.
type World struct {
	ctx      context.Context
	sc       *scenario.Consumption
	conv     store.Conventions
	truth    *clock.Virtual
	nodes    map[string]*clock.Node
	store    store.Store
	broker   broker.Broker
	producer *producer.Producer
	workers  []*consumer.Worker
	byName   map[string]*consumer.Worker
	nodeOf   map[string]string // worker -> node
	runs     map[string]int    // handler runs by consumer/event id
	events   map[string]int    // event id -> index
	decoded  *decodeCache
	phase    Phase
	step     int
	res      *ConsumptionResult
	trace    *Trace
	obs      []Observer
	view     View
}

// RunConsumption plays a consumption scenario against target, showing every
// action to the observers.
func RunConsumption(s *scenario.Scenario, t system.Target, obs ...Observer) (*Outcome, error) {
	if s.Kind != scenario.KindConsumption || s.Consumption == nil {
		return nil, fmt.Errorf("runner: scenario kind %q is not %q", s.Kind, scenario.KindConsumption)
	}
	if t.Consumption == nil {
		return nil, fmt.Errorf("runner: target %q has no consumption parts", t.Name)
	}
	w, err := NewWorld(s.Consumption, t.Consumption, obs...)
	if err != nil {
		return nil, err
	}
	defer w.Close()
	for i, st := range s.Consumption.Steps {
		if err := w.Apply(i, st); err != nil {
			return nil, err
		}
	}
	w.Finish()
	return &Outcome{Scenario: s, Target: t.Name, Trace: w.trace, Consumption: w.res}, nil
}

// NewWorld assembles the parts of a consumption run at true time StartMs.
// The caller plays the schedule with Apply, then Finish, then Close.
func NewWorld(sc *scenario.Consumption, parts *system.Consumption, obs ...Observer) (*World, error) {
	cfg := sc.Config
	truth := clock.NewVirtual(StartMs)
	if err := parts.Conventions.Validate(); err != nil {
		return nil, fmt.Errorf("runner: the store's conventions: %w", err)
	}
	st, err := parts.NewStore(truth)
	if err != nil {
		return nil, fmt.Errorf("runner: open store: %w", err)
	}
	// Everything in the run sees the store as a consumer that knows its
	// conventions does.
	st = parts.Conventions.Canonical(st)
	policy := cfg.Policy
	br := parts.NewBroker(truth, policy, cfg.Consumers)
	w := &World{
		ctx: context.Background(), sc: sc, truth: truth, nodes: map[string]*clock.Node{},
		store: st, broker: br, producer: &producer.Producer{Gate: parts.NewGate(), Broker: br},
		byName: map[string]*consumer.Worker{}, nodeOf: map[string]string{}, runs: map[string]int{}, events: map[string]int{},
		decoded: &decodeCache{m: map[string]event.OrderPaid{}},
		phase:   PhaseSchedule, obs: obs, conv: parts.Conventions,
		res: &ConsumptionResult{Config: cfg, Events: sc.Events, StartMs: StartMs, Conventions: parts.Conventions, Metrics: map[string]consumer.Metrics{}},
	}
	buf := newRunBuffers(len(sc.Steps))
	if buf.actions == nil {
		buf.actions = make([]Action, 0, cap(buf.entries))
	}
	w.res.Actions, w.res.buf = buf.actions, buf
	w.view = View{w: w}
	w.trace = &Trace{cons: w.res, entries: buf.entries}
	for i, e := range sc.Events {
		w.events[e.ID] = i
	}
	for _, n := range cfg.Nodes {
		w.nodes[n.Name] = clock.NewNode(n.Name, truth, n.SkewMs)
	}
	for _, wc := range cfg.Workers {
		deps := consumer.Deps{Store: st, Broker: br, Producer: w.producer, Node: w.nodes[wc.Node], Handler: w.handler, Decode: w.decode}
		wk := consumer.NewWorker(consumer.Config{Name: wc.Name, Consumer: wc.Consumer, LeaseMs: cfg.LeaseMs}, deps, parts.Pipeline())
		w.workers = append(w.workers, wk)
		w.byName[wc.Name] = wk
		w.nodeOf[wc.Name] = wc.Node
	}
	w.trace.note(noteStart)
	for _, n := range cfg.Nodes {
		if n.SkewMs != 0 {
			w.trace.notef("t=+0ms node %s runs %+dms off true time", n.Name, n.SkewMs)
		}
	}
	return w, nil
}

// Close releases the store (store.Closer).
func (w *World) Close() {
	if c, ok := w.store.(store.Closer); ok {
		_ = c.Close()
	}
}

// Result is what the run observed so far.
func (w *World) Result() *ConsumptionResult { return w.res }

// Trace is the run's account so far.
func (w *World) Trace() *Trace { return w.trace }

// handler is the application code: it credits the ledger, failing as the
// event's fate says. Runs are counted per consumer and event.
func (w *World) handler(tx store.Tx, consumerName string, ev event.OrderPaid) consumer.Result {
	return creditByFate(w.sc.Events, w.events, w.runs, tx, consumerName, ev)
}

// creditByFate credits ev to the ledger in tx, then answers as its fate in
// evs says (see countRun). events maps an event id to its index in evs (an
// event the scenario does not hold is credited). The reference world and
// the live runs share it, so both fail alike.
func creditByFate(evs []scenario.Event, events, runs map[string]int, tx store.Tx, consumerName string, ev event.OrderPaid) consumer.Result {
	res := consumer.Credit(tx, consumerName, ev)
	i, ok := events[ev.EventID]
	if !ok {
		return res
	}
	switch countRun(evs, runs, consumerName, i) {
	case scenario.FatePoison:
		return consumer.Result{Kind: consumer.Poison, Reason: "poison: amount rejected"}
	case scenario.FateTransient:
		return consumer.Result{Kind: consumer.Transient, Reason: LiveReasonFate}
	}
	return res
}

// countRun counts a handler run of event evs[i] by consumerName in runs
// (by consumer/event id) and returns how the scenario ends it: poison
// always, transient for its first Transient runs, else ok.
func countRun(evs []scenario.Event, runs map[string]int, consumerName string, i int) scenario.Fate {
	spec := evs[i]
	k := consumerName + "/" + spec.ID
	runs[k]++
	if spec.Fate == scenario.FateTransient && runs[k] > spec.Transient {
		return scenario.FateOK
	}
	return spec.Fate
}

// decode is event.DecodeOrderPaid, remembered per payload for the run and
// the copies made of it (Clone): decoding is a pure function of the bytes.
func (w *World) decode(b []byte) (event.OrderPaid, error) {
	return w.decoded.decode(b)
}

// decodeCache remembers decoded payloads; the copies of a world share it,
// from any goroutine.
type decodeCache struct {
	mu sync.Mutex
	m  map[string]event.OrderPaid
}

// remember records that payload, which the runner encoded from ev, decodes
// to ev: the consumer's decode of the runner's own payloads costs no JSON
// parse (the codec's round trip is tested, TestPayloadRoundTrips).
func (c *decodeCache) remember(payload []byte, ev event.OrderPaid) {
	c.mu.Lock()
	c.m[string(payload)] = ev
	c.mu.Unlock()
}

func (c *decodeCache) decode(b []byte) (event.OrderPaid, error) {
	c.mu.Lock()
	ev, ok := c.m[string(b)]
	c.mu.Unlock()
	if ok {
		return ev, nil
	}
	ev, err := event.DecodeOrderPaid(b)
	if err == nil {
		c.mu.Lock()
		c.m[string(b)] = ev
		c.mu.Unlock()
	}
	return ev, err
}

func (w *World) rel() int64 { return w.truth.NowMs() - StartMs }

// record stamps a and appends it to the result and the trace, then shows it
// to the observers.
func (w *World) record(a Action) {
	a.Seq = len(w.res.Actions)
	a.Phase = w.phase
	a.Step = w.step
	if w.phase != PhaseSchedule {
		a.Step = -1
	}
	a.AtMs = w.rel()
	a.Line = w.trace.action(a.Seq)
	w.res.Actions = append(w.res.Actions, a)
	for _, o := range w.obs {
		o.After(&w.view, &w.res.Actions[a.Seq])
	}
}

func (w *World) unexpected(what string, err error) {
	w.res.Errors = append(w.res.Errors, fmt.Sprintf("%s: %v", what, err))
}

// Apply plays schedule step i.
func (w *World) Apply(i int, st scenario.Step) error {
	w.step = i
	switch st.Op {
	case scenario.OpProduce:
		w.produce(st.Event)
	case scenario.OpProduceFail:
		ev := w.sc.Events[st.Event]
		d, err := w.producer.ProduceFailing(w.sc.Config.Topic, ev.Tenant, ev.ID)
		w.record(Action{Kind: ActProduceFail, Event: st.Event, Key: store.Key{Tenant: ev.Tenant, ID: ev.ID}, Decision: d, Err: errText(err)})
	case scenario.OpDuplicate:
		w.duplicate(st.Event, st.N)
	case scenario.OpDeliver:
		w.deliver(w.byName[st.Worker], st.Pick)
	case scenario.OpRun:
		w.stepWorker(w.byName[st.Worker])
	case scenario.OpCrash:
		w.crash(w.byName[st.Worker])
	case scenario.OpAdvance:
		w.advance(st.Ms)
	case scenario.OpSkew:
		n := w.nodes[st.Node]
		n.SetSkew(st.Ms)
		w.record(Action{Kind: ActSkew, Node: st.Node, Ms: st.Ms, WallMs: n.NowMs() - StartMs})
	case scenario.OpClockStep:
		n := w.nodes[st.Node]
		n.Step(st.Ms)
		w.record(Action{Kind: ActClockStep, Node: st.Node, Ms: st.Ms, WallMs: n.NowMs() - StartMs})
	case scenario.OpCleanup:
		w.cleanup(w.byName[st.Worker])
	case scenario.OpReplay:
		w.replay()
	default:
		return fmt.Errorf("runner: step %d: unknown op %q", i, st.Op)
	}
	return nil
}

// Finish drains the system to quiescence, replays the whole stream and
// drains again, collects the final state, and probes every record left in
// processing.
func (w *World) Finish() {
	w.phase = PhaseDrain
	w.trace.note(noteDrain)
	if !w.drain() {
		w.finish()
		return
	}
	w.res.LedgerBeforeReplay = w.ledger()
	w.res.DLQBeforeReplay = w.broker.DLQ()
	w.phase = PhaseReplay
	w.replay()
	w.drain()
	w.res.LedgerAfterReplay = w.ledger()
	w.finish()
}

func (w *World) replay() {
	offs := w.broker.Replay(w.sc.Config.Topic)
	w.record(Action{Kind: ActReplay, Offsets: offs})
}

func (w *World) produce(i int) {
	ev := w.sc.Events[i]
	paid := event.OrderPaid{EventID: ev.ID, OccurredAtMs: w.truth.NowMs(), Tenant: ev.Tenant, OrderID: ev.OrderID, UserID: ev.UserID, AmountCents: ev.AmountCents}
	payload := paid.Encode()
	w.decoded.remember(payload, paid)
	res, err := w.producer.Produce(w.sc.Config.Topic, ev.Tenant, ev.ID, payload)
	w.record(Action{Kind: ActProduce, Event: i, Key: store.Key{Tenant: ev.Tenant, ID: ev.ID}, Decision: res.Decision, Offset: res.Offset, Err: errText(err)})
}

func (w *World) duplicate(i, n int) {
	ev := w.sc.Events[i]
	for _, m := range w.broker.Messages() {
		if m.Message.Key == ev.ID && m.Message.Tenant == ev.Tenant && m.Message.Origin == broker.Produced {
			offs, err := w.broker.Duplicate(m.Message.Topic, m.Message.Offset, n)
			if err != nil {
				w.unexpected("duplicate", err)
				return
			}
			w.record(Action{Kind: ActDuplicate, Event: i, Key: store.Key{Tenant: ev.Tenant, ID: ev.ID}, Offset: m.Message.Offset, Offsets: offs})
			return
		}
	}
	// Nothing produced yet: the broker has nothing to duplicate.
	w.record(Action{Kind: ActDuplicate, Event: i, Key: store.Key{Tenant: ev.Tenant, ID: ev.ID}, Offset: -1})
}

// deliver hands a worker the pick-th eligible message of its group. It
// reports whether anything was delivered.
func (w *World) deliver(wk *consumer.Worker, pick int) bool {
	if !wk.Idle() {
		return false
	}
	d, ok := w.broker.Deliver(wk.Consumer(), pick)
	if !ok {
		return false
	}
	m := d.Message
	if err := wk.Receive(d); err != nil {
		w.unexpected("receive", err)
		return false
	}
	w.record(Action{Kind: ActDeliver, Worker: wk.Name(), Key: store.Key{Tenant: m.Tenant, Consumer: wk.Consumer(), ID: m.Key},
		Offset: m.Offset, Attempts: m.Attempts, LastError: m.LastError, Origin: m.Origin})
	return true
}

func (w *World) ledger() []store.Entry {
	l, err := w.store.Ledger(w.ctx)
	if err != nil {
		w.unexpected("ledger", err)
	}
	return l
}

// stepWorker advances a worker by one pipeline step.
func (w *World) stepWorker(wk *consumer.Worker) bool {
	if wk.Idle() {
		return false
	}
	for _, o := range w.obs {
		o.BeforeStep(&w.view, wk.Name())
	}
	d, _ := wk.Delivery()
	rep, err := wk.Step(w.ctx)
	a := Action{Kind: ActionKind(rep.Action), Worker: wk.Name(), Key: rep.Key, Offset: d.Message.Offset, Attempts: d.Message.Attempts,
		Token: rep.Token, Claim: rep.Claim, Handler: rep.Handler, Commit: rep.Commit, Stale: rep.Stale, Err: rep.Err}
	if rep.Claim != nil && rep.Claim.Outcome == store.Acquired {
		a.Token = rep.Claim.Token
	}
	w.record(a)
	if err != nil && !rep.Stale {
		w.unexpected(fmt.Sprintf("%s %s", wk.Name(), rep.Action), err)
	}
	return true
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (w *World) crash(wk *consumer.Worker) {
	d, busy := wk.Delivery()
	key, _ := wk.Held()
	wk.Crash(w.ctx)
	if !busy {
		key = store.Key{}
	} else if key == (store.Key{}) {
		key = store.Key{Tenant: d.Message.Tenant, Consumer: wk.Consumer(), ID: d.Message.Key}
	}
	w.record(Action{Kind: ActCrash, Worker: wk.Name(), Busy: busy, Key: key, Offset: d.Message.Offset})
}

func (w *World) advance(ms int64) {
	w.truth.Advance(ms)
	w.broker.Tick()
	w.record(Action{Kind: ActAdvance, Ms: ms})
}

func (w *World) cleanup(wk *consumer.Worker) {
	before, err := w.store.Records(w.ctx)
	if err != nil {
		w.unexpected("records", err)
	}
	storeNow, _ := w.store.NowMs(w.ctx)
	nodeNow := wk.Node().NowMs()
	removed, err := wk.Cleanup(w.ctx, w.sc.Config.RetentionMs)
	if err != nil {
		w.unexpected("cleanup", err)
	}
	a := Action{Kind: ActCleanup, Worker: wk.Name(), Node: w.nodeOf[wk.Name()], WallMs: nodeNow - StartMs, Err: errText(err)}
	for _, k := range removed {
		rm := Removal{Key: k, StoreNowMs: storeNow, NodeNowMs: nodeNow}
		if i := slices.IndexFunc(before, func(r store.Record) bool { return r.Key == k }); i >= 0 {
			rm.FinishedAtMs = before[i].FinishedAtMs
		}
		a.Removed = append(a.Removed, rm)
	}
	w.record(a)
}

// drain drives the system until the broker has nothing pending or in
// flight: every busy worker finishes, idle workers take what is eligible in
// offset order, and time jumps to the next redelivery. It reports false if
// DrainLimit actions did not suffice.
func (w *World) drain() bool {
	for n := 0; n < DrainLimit; {
		progressed := false
		for _, wk := range w.workers {
			for !wk.Idle() && n < DrainLimit {
				w.stepWorker(wk)
				n++
				progressed = true
			}
		}
		for _, wk := range w.workers {
			if w.deliver(wk, 0) {
				n++
				progressed = true
			}
		}
		if progressed {
			continue
		}
		quiet, next := w.broker.Quiet()
		if quiet {
			w.res.Quiesced = true
			return true
		}
		if wait := next - w.truth.NowMs(); wait > 0 {
			w.advance(wait)
		} else {
			w.broker.Tick()
		}
		n++
	}
	w.res.Quiesced = false
	w.res.DrainNote = fmt.Sprintf("the system did not quiesce within %d drain actions", DrainLimit)
	w.trace.notef("-- %s --", w.res.DrainNote)
	return false
}

// finish collects the final state, then probes every record left in
// processing, after every lease has had time to expire: it must be
// claimable, or the event is stuck forever.
func (w *World) finish() {
	r := w.res
	r.Ledger = w.ledger()
	recs, err := w.store.Records(w.ctx)
	if err != nil {
		w.unexpected("records", err)
	}
	r.Records = recs
	r.DLQ = w.broker.DLQ()
	r.Messages = w.broker.Messages()
	for _, wk := range w.workers {
		r.Metrics[wk.Name()] = wk.Metrics()
	}
	var stuck []store.Record
	for _, rec := range recs {
		if rec.State == store.Processing {
			stuck = append(stuck, rec)
		}
	}
	if len(stuck) == 0 {
		return
	}
	w.phase = PhaseProbe
	// Every hold has ended by then: a lease has run out, or a mark with
	// no lease (or one whose own expiry comes first) has expired.
	runOut := w.conv.HoldMs(w.sc.Config.LeaseMs)
	w.truth.Advance(runOut)
	w.trace.notef("-- probe: %d record(s) left in processing; time advances one hold (%dms) and each is claimed --", len(stuck), runOut)
	for _, rec := range stuck {
		c, err := w.store.Claim(w.ctx, rec.Key, w.sc.Config.LeaseMs)
		p := Probe{Key: rec.Key, Outcome: c.Outcome, Err: errText(err)}
		r.Probes = append(r.Probes, p)
		w.record(Action{Kind: ActProbe, Key: rec.Key, Claim: &c, Err: p.Err})
	}
}

// Run plays any scenario against target, by its kind, showing a
// consumption run's actions to the observers.
func Run(s *scenario.Scenario, t system.Target, obs ...Observer) (*Outcome, error) {
	switch s.Kind {
	case scenario.KindConsumption:
		return RunConsumption(s, t, obs...)
	case scenario.KindProjection:
		return RunProjection(s, t)
	}
	return nil, errors.New("runner: unknown scenario kind " + string(s.Kind))
}
