package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/go-cmp/cmp"
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

// world is one consumption run in progress.
type world struct {
	ctx      context.Context
	sc       *scenario.Consumption
	truth    *clock.Virtual
	nodes    map[string]*clock.Node
	store    store.Store
	broker   broker.Broker
	producer *producer.Producer
	workers  []*consumer.Worker
	byName   map[string]*consumer.Worker
	runs     map[string]int // handler runs by consumer/event id
	latest   map[store.Key]uint64
	cleaned  map[string]bool // consumer/event id legitimately cleaned up
	phase    Phase
	step     int
	res      *ConsumptionResult
	trace    *Trace
}

// RunConsumption plays a consumption scenario against target.
func RunConsumption(s *scenario.Scenario, t system.Target) (*Outcome, error) {
	if s.Kind != scenario.KindConsumption || s.Consumption == nil {
		return nil, fmt.Errorf("runner: scenario kind %q is not %q", s.Kind, scenario.KindConsumption)
	}
	if t.Consumption == nil {
		return nil, fmt.Errorf("runner: target %q has no consumption parts", t.Name)
	}
	out := &Outcome{Scenario: s, Target: t.Name}
	w, err := newWorld(s.Consumption, t.Consumption, &out.Trace)
	if err != nil {
		return nil, err
	}
	defer w.close()
	out.Consumption = w.res
	if err := w.run(); err != nil {
		return nil, err
	}
	return out, nil
}

func newWorld(sc *scenario.Consumption, parts *system.Consumption, tr *Trace) (*world, error) {
	cfg := sc.Config
	truth := clock.NewVirtual(StartMs)
	st, err := parts.NewStore(truth)
	if err != nil {
		return nil, fmt.Errorf("runner: open store: %w", err)
	}
	policy := broker.Policy{MaxAttempts: cfg.MaxAttempts, BackoffMs: cfg.BackoffMs, MaxBackoffMs: cfg.MaxBackoffMs, AckTimeoutMs: cfg.AckTimeoutMs}
	br := parts.NewBroker(truth, policy, cfg.Consumers)
	w := &world{
		ctx: context.Background(), sc: sc, truth: truth, nodes: map[string]*clock.Node{},
		store: st, broker: br, producer: &producer.Producer{Gate: parts.NewGate(), Broker: br},
		byName: map[string]*consumer.Worker{}, runs: map[string]int{}, latest: map[store.Key]uint64{},
		cleaned: map[string]bool{}, phase: PhaseSchedule, trace: tr,
		res: &ConsumptionResult{Config: cfg, Events: sc.Events, StartMs: StartMs, Metrics: map[string]consumer.Metrics{}},
	}
	for _, n := range cfg.Nodes {
		w.nodes[n.Name] = clock.NewNode(n.Name, truth, n.SkewMs)
	}
	for _, wc := range cfg.Workers {
		deps := consumer.Deps{Store: st, Broker: br, Producer: w.producer, Node: w.nodes[wc.Node], Handler: w.handler}
		wk := consumer.NewWorker(consumer.Config{Name: wc.Name, Consumer: wc.Consumer, LeaseMs: cfg.LeaseMs}, deps, parts.Pipeline())
		w.workers = append(w.workers, wk)
		w.byName[wc.Name] = wk
	}
	return w, nil
}

func (w *world) close() {
	if c, ok := w.store.(store.Closer); ok {
		_ = c.Close()
	}
}

// handler is the application code: it credits the ledger, failing as the
// event's fate says. Runs are counted per consumer and event.
func (w *world) handler(tx store.Tx, consumerName string, ev event.OrderPaid) consumer.Result {
	spec, ok := w.eventByID(ev.EventID)
	res := consumer.Credit(tx, consumerName, ev)
	if !ok {
		return res
	}
	k := consumerName + "/" + ev.EventID
	w.runs[k]++
	switch {
	case spec.Fate == scenario.FatePoison:
		return consumer.Result{Kind: consumer.Poison, Reason: "poison: amount rejected"}
	case spec.Fate == scenario.FateTransient && w.runs[k] <= spec.Transient:
		return consumer.Result{Kind: consumer.Transient, Reason: "transient: downstream timeout"}
	}
	return res
}

func (w *world) eventByID(id string) (scenario.Event, bool) {
	for _, e := range w.sc.Events {
		if e.ID == id {
			return e, true
		}
	}
	return scenario.Event{}, false
}

func (w *world) rel() int64 { return w.truth.NowMs() - StartMs }

func (w *world) logf(format string, args ...any) {
	w.trace.Addf("t=+%dms %s", w.rel(), fmt.Sprintf(format, args...))
}

func (w *world) record(a Action) {
	a.Seq = len(w.res.Actions)
	a.Line = len(w.trace.Lines) // every action is told before it is recorded
	a.Phase = w.phase
	a.Step = w.step
	if w.phase != PhaseSchedule {
		a.Step = -1
	}
	a.AtMs = w.rel()
	w.res.Actions = append(w.res.Actions, a)
}

func (w *world) unexpected(what string, err error) {
	w.res.Errors = append(w.res.Errors, fmt.Sprintf("%s: %v", what, err))
}

func (w *world) run() error {
	w.logf("start: %d event(s), %d worker(s), consumers %s, max_attempts=%d lease=%dms ack_timeout=%dms retention=%dms",
		len(w.sc.Events), len(w.workers), strings.Join(w.sc.Config.Consumers, ","), w.sc.Config.MaxAttempts,
		w.sc.Config.LeaseMs, w.sc.Config.AckTimeoutMs, w.sc.Config.RetentionMs)
	for _, n := range w.sc.Config.Nodes {
		if n.SkewMs != 0 {
			w.logf("node %s runs %+dms off true time", n.Name, n.SkewMs)
		}
	}
	for i, st := range w.sc.Steps {
		w.step = i
		if err := w.apply(st); err != nil {
			return err
		}
	}
	w.phase = PhaseDrain
	w.trace.Addf("-- drain: the runner drives the system until nothing is pending --")
	if !w.drain() {
		w.finish()
		return nil
	}
	w.res.LedgerBeforeReplay = w.ledger()
	w.res.DLQBeforeReplay = w.broker.DLQ()
	w.phase = PhaseReplay
	offs := w.broker.Replay(w.sc.Config.Topic)
	w.logf("replay: the whole stream (%d message(s)) is delivered again", len(offs))
	w.record(Action{Kind: "replay"})
	w.drain()
	w.res.LedgerAfterReplay = w.ledger()
	w.finish()
	return nil
}

func (w *world) apply(st scenario.Step) error {
	switch st.Op {
	case scenario.OpProduce:
		w.produce(st.Event)
	case scenario.OpProduceFail:
		ev := w.sc.Events[st.Event]
		d, err := w.producer.ProduceFailing(w.sc.Config.Topic, ev.Tenant, ev.ID)
		w.logf("produce %s fails (gate said %s): %v", ev.ID, d, err)
		w.record(Action{Kind: "produce-fail", Key: store.Key{Tenant: ev.Tenant, ID: ev.ID}})
	case scenario.OpDuplicate:
		w.duplicate(st.Event, st.N)
	case scenario.OpDeliver:
		w.deliver(w.byName[st.Worker], st.Pick)
	case scenario.OpStep:
		w.stepWorker(w.byName[st.Worker])
	case scenario.OpCrash:
		w.crash(w.byName[st.Worker])
	case scenario.OpAdvance:
		w.advance(st.Ms)
	case scenario.OpSkew:
		n := w.nodes[st.Node]
		n.SetSkew(st.Ms)
		w.logf("node %s clock skewed to %+dms (wall reads t=%+dms)", st.Node, st.Ms, n.NowMs()-StartMs)
		w.record(Action{Kind: "skew"})
	case scenario.OpClockStep:
		n := w.nodes[st.Node]
		n.Step(st.Ms)
		w.logf("node %s clock steps %+dms (wall reads t=%+dms)", st.Node, st.Ms, n.NowMs()-StartMs)
		w.record(Action{Kind: "clock-step"})
	case scenario.OpCleanup:
		w.cleanup(w.byName[st.Worker])
	case scenario.OpReplay:
		offs := w.broker.Replay(w.sc.Config.Topic)
		w.logf("replay: the whole stream (%d message(s)) is delivered again", len(offs))
		w.record(Action{Kind: "replay"})
	default:
		return fmt.Errorf("runner: step %d: unknown op %q", w.step, st.Op)
	}
	return nil
}

func (w *world) produce(i int) {
	ev := w.sc.Events[i]
	payload := event.OrderPaid{EventID: ev.ID, OccurredAtMs: w.truth.NowMs(), Tenant: ev.Tenant, OrderID: ev.OrderID, UserID: ev.UserID, AmountCents: ev.AmountCents}.Encode()
	res, err := w.producer.Produce(w.sc.Config.Topic, ev.Tenant, ev.ID, payload)
	key := store.Key{Tenant: ev.Tenant, ID: ev.ID}
	switch {
	case err != nil:
		w.logf("produce %s rejected: %v", ev.ID, err)
	case res.Decision == broker.Proceed:
		w.logf("produce %s (order %s, user %s, %d¢) -> offset %d", ev.ID, ev.OrderID, ev.UserID, ev.AmountCents, res.Offset)
	default:
		w.logf("produce %s again: gate says %s, nothing enqueued", ev.ID, res.Decision)
	}
	w.record(Action{Kind: "produce", Key: key, Offset: res.Offset, Err: errText(err)})
}

func (w *world) duplicate(i, n int) {
	ev := w.sc.Events[i]
	for _, m := range w.broker.Messages() {
		if m.Message.Key == ev.ID && m.Message.Tenant == ev.Tenant && m.Message.Origin == broker.Produced {
			offs, err := w.broker.Duplicate(m.Message.Topic, m.Message.Offset, n)
			if err != nil {
				w.unexpected("duplicate", err)
				return
			}
			w.logf("broker duplicates %s (offset %d) %d time(s) -> offsets %v", ev.ID, m.Message.Offset, n, offs)
			w.record(Action{Kind: "duplicate", Key: store.Key{Tenant: ev.Tenant, ID: ev.ID}, Offset: m.Message.Offset})
			return
		}
	}
	w.logf("broker would duplicate %s, but it was never produced", ev.ID)
}

// deliver hands a worker the pick-th eligible message of its group. It
// reports whether anything was delivered.
func (w *world) deliver(wk *consumer.Worker, pick int) bool {
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
	extra := ""
	if m.LastError != "" {
		extra = ", last_error " + m.LastError
	}
	if m.Origin != broker.Produced {
		extra += ", " + string(m.Origin)
	}
	w.logf("broker delivers %s (offset %d, attempt %d%s) to %s [%s]", m.Key, m.Offset, m.Attempts, extra, wk.Name(), wk.Consumer())
	w.record(Action{Kind: "deliver", Worker: wk.Name(), Key: store.Key{Tenant: m.Tenant, Consumer: wk.Consumer(), ID: m.Key},
		Offset: m.Offset, Attempts: m.Attempts, Origin: m.Origin})
	return true
}

// snapshot is the part of the store a fencing check compares.
type snapshot struct {
	Records []store.Record
	Ledger  []store.Entry
}

func (w *world) snap() snapshot {
	recs, err := w.store.Records(w.ctx)
	if err != nil {
		w.unexpected("records", err)
	}
	return snapshot{Records: recs, Ledger: w.ledger()}
}

func (w *world) ledger() []store.Entry {
	l, err := w.store.Ledger(w.ctx)
	if err != nil {
		w.unexpected("ledger", err)
	}
	return l
}

// stepWorker advances a worker by one step. A step taken with a token older
// than the newest issued for its key is checked for changing nothing.
func (w *world) stepWorker(wk *consumer.Worker) bool {
	if wk.Idle() {
		return false
	}
	d, _ := wk.Delivery()
	// Only a worker whose token was already superseded can make a stale
	// call; snapshot the store around its step alone (snapshots are most of
	// the runner's cost).
	var before snapshot
	key, token := wk.Held()
	stale := token != 0 && token < w.latest[key]
	if stale {
		before = w.snap()
	}
	rep, err := wk.Step(w.ctx)
	a := Action{Kind: string(rep.Action), Worker: wk.Name(), Key: rep.Key, Offset: d.Message.Offset, Attempts: d.Message.Attempts,
		Token: rep.Token, Claim: rep.Claim, Handler: rep.Handler, Commit: rep.Commit, Stale: rep.Stale, Err: errText(err)}
	if rep.Claim != nil && rep.Claim.Outcome == store.Acquired {
		w.latest[rep.Key] = max(w.latest[rep.Key], rep.Claim.Token)
		a.Token = rep.Claim.Token
	}
	w.logf("%s", describe(wk.Name(), rep))
	w.record(a)
	if err != nil && !rep.Stale {
		w.unexpected(fmt.Sprintf("%s %s", wk.Name(), rep.Action), err)
	}
	switch rep.Action {
	case consumer.ActCommit, consumer.ActEffect, consumer.ActMark, consumer.ActFail:
		if latest := w.latest[rep.Key]; stale && rep.Token != 0 && rep.Token < latest {
			after := w.snap()
			fc := FenceCheck{Line: len(w.trace.Lines), Worker: wk.Name(), Key: rep.Key, Token: rep.Token, LatestToken: latest,
				Rejected: err != nil || rep.Stale, Diff: cmp.Diff(before, after)}
			w.res.Fences = append(w.res.Fences, fc)
		}
	}
	if writesStore(rep.Action) {
		w.checkAtomicity()
	}
	return true
}

// writesStore reports whether a pipeline action may write the claim store
// or the ledger. Acks, nacks and DLQ publishes go to the broker, a handle
// only opens a unit of work and stages, a check only reads: skipping the
// atomicity snapshot after them halves the runner's cost.
func writesStore(a consumer.Action) bool {
	switch a {
	case consumer.ActAck, consumer.ActNack, consumer.ActDeadLetter, consumer.ActHandle, consumer.ActCheck:
		return false
	}
	return true
}

func describe(name string, rep consumer.Report) string {
	switch rep.Action {
	case consumer.ActClaim:
		c := rep.Claim
		s := fmt.Sprintf("%s claims %s -> %s", name, rep.Key, c.Outcome)
		if c.Outcome == store.Acquired {
			s += fmt.Sprintf(" (token %d, attempt %d", c.Token, c.Attempt)
			if c.Takeover {
				s += ", took over an expired lease"
			}
			s += ")"
		}
		return s + errSuffix(rep.Err)
	case consumer.ActHandle:
		return fmt.Sprintf("%s runs the handler for %s -> %s %s%s", name, rep.Key.ID, rep.Handler.Kind, rep.Handler.Reason, errSuffix(rep.Err))
	case consumer.ActCommit, consumer.ActMark, consumer.ActEffect:
		what := "commits effect + processed mark"
		switch rep.Action {
		case consumer.ActMark:
			what = "marks processed"
		case consumer.ActEffect:
			what = "writes the effect alone (its store cannot commit effect and mark together)"
		}
		switch {
		case rep.Stale:
			return fmt.Sprintf("%s %s with token %d -> rejected: %s", name, what, rep.Token, rep.Err)
		case rep.Err != "":
			return fmt.Sprintf("%s %s with token %d -> error: %s", name, what, rep.Token, rep.Err)
		}
		c := rep.Commit
		if c == nil {
			return fmt.Sprintf("%s %s (token %d)", name, what, rep.Token)
		}
		s := fmt.Sprintf("%s %s with token %d -> %d credited", name, what, rep.Token, c.Credited)
		if c.DuplicatesIgnored > 0 {
			s += fmt.Sprintf(", %d duplicate credit(s) stopped only by the ledger's unique constraint", c.DuplicatesIgnored)
		}
		return s
	case consumer.ActFail:
		return fmt.Sprintf("%s releases its claim on %s as failed%s", name, rep.Key.ID, errSuffix(rep.Err))
	case consumer.ActNack:
		return fmt.Sprintf("%s nacks %s (%s)", name, rep.Key.ID, rep.Handler.Reason)
	case consumer.ActDeadLetter:
		return fmt.Sprintf("%s publishes %s to the DLQ (%s)", name, rep.Key.ID, rep.Handler.Reason)
	case consumer.ActAck:
		return fmt.Sprintf("%s acks %s", name, rep.Key.ID)
	case consumer.ActCheck:
		return fmt.Sprintf("%s reads the record of %s", name, rep.Key)
	}
	return fmt.Sprintf("%s %s %s%s", name, rep.Action, rep.Key, errSuffix(rep.Err))
}

func errSuffix(e string) string {
	if e == "" {
		return ""
	}
	return " (error: " + e + ")"
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (w *world) crash(wk *consumer.Worker) {
	d, busy := wk.Delivery()
	wk.Crash(w.ctx)
	if busy {
		w.logf("%s CRASHES holding %s (offset %d); its delivery is never acked", wk.Name(), d.Message.Key, d.Message.Offset)
	} else {
		w.logf("%s crashes while idle", wk.Name())
	}
	w.record(Action{Kind: "crash", Worker: wk.Name(), Offset: d.Message.Offset})
}

func (w *world) advance(ms int64) {
	w.truth.Advance(ms)
	w.broker.Tick()
	w.logf("time advances %dms", ms)
	w.record(Action{Kind: "advance"})
}

func (w *world) cleanup(wk *consumer.Worker) {
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
	ids := make([]string, 0, len(removed))
	for _, k := range removed {
		ids = append(ids, k.ID)
	}
	w.logf("cleanup on %s (its wall clock reads t=%+dms) removes %d processed record(s) %v", wk.Name(), nodeNow-StartMs, len(removed), ids)
	w.record(Action{Kind: "cleanup", Worker: wk.Name(), Err: errText(err)})
	for _, k := range removed {
		rm := Removal{Line: len(w.trace.Lines), Worker: wk.Name(), Key: k, StoreNowMs: storeNow, NodeNowMs: nodeNow}
		if i := slices.IndexFunc(before, func(r store.Record) bool { return r.Key == k }); i >= 0 {
			rm.FinishedAtMs = before[i].FinishedAtMs
		}
		rm.Premature = rm.FinishedAtMs > storeNow-w.sc.Config.RetentionMs
		if !rm.Premature {
			w.cleaned[k.Consumer+"/"+k.ID] = true
		}
		w.res.Removed = append(w.res.Removed, rm)
	}
	w.checkAtomicity()
}

// checkAtomicity looks for a ledger entry without its processed record, or
// a processed record without its ledger entry, after every action that can
// change the store (worker steps and cleanups).
func (w *world) checkAtomicity() {
	s := w.snap()
	processed := map[string]bool{}
	for _, r := range s.Records {
		if r.State == store.Processed {
			processed[r.Key.Consumer+"/"+r.Key.ID] = true
		}
	}
	credited := map[string]bool{}
	for _, e := range s.Ledger {
		id := e.Consumer + "/" + e.EventID
		credited[id] = true
		if !processed[id] && !w.cleaned[id] {
			w.breach(fmt.Sprintf("ledger entry %s has no processed record", id))
		}
	}
	for _, r := range s.Records {
		id := r.Key.Consumer + "/" + r.Key.ID
		if r.State == store.Processed && !credited[id] {
			w.breach(fmt.Sprintf("record %s is processed but the ledger has no entry for it", id))
		}
	}
}

func (w *world) breach(detail string) {
	for _, b := range w.res.Breach {
		if b.Detail == detail {
			return // report each breach once, where it was first seen
		}
	}
	w.res.Breach = append(w.res.Breach, Breach{Line: len(w.trace.Lines), Detail: detail})
}

// drain drives the system until the broker has nothing pending or in
// flight: every busy worker finishes, idle workers take what is eligible in
// offset order, and time jumps to the next redelivery. It reports false if
// DrainLimit actions did not suffice.
func (w *world) drain() bool {
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
	w.trace.Addf("-- %s --", w.res.DrainNote)
	return false
}

// finish collects the final state, then probes every record left in
// processing, after every lease has had time to expire: it must be
// claimable, or the event is stuck forever.
func (w *world) finish() {
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
	w.truth.Advance(w.sc.Config.LeaseMs)
	w.trace.Addf("-- probe: %d record(s) left in processing; time advances one lease (%dms) and each is claimed --", len(stuck), w.sc.Config.LeaseMs)
	for _, rec := range stuck {
		c, err := w.store.Claim(w.ctx, rec.Key, w.sc.Config.LeaseMs)
		p := Probe{Key: rec.Key, Outcome: c.Outcome, Err: errText(err)}
		r.Probes = append(r.Probes, p)
		w.logf("probe claims %s -> %s%s", rec.Key, c.Outcome, errSuffix(p.Err))
	}
}

// Run plays any scenario against target, by its kind.
func Run(s *scenario.Scenario, t system.Target) (*Outcome, error) {
	switch s.Kind {
	case scenario.KindConsumption:
		return RunConsumption(s, t)
	case scenario.KindProjection:
		return RunProjection(s, t)
	}
	return nil, errors.New("runner: unknown scenario kind " + string(s.Kind))
}
