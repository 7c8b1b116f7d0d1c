package consumerharness

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/idemcheck/idemcheck/internal/consumerharness/backend"
	"github.com/idemcheck/idemcheck/internal/consumerharness/sqlclock"
	"github.com/idemcheck/idemcheck/internal/consumerharness/sqlhook"
	"github.com/idemcheck/idemcheck/internal/search"
)

// The search of Verify: the search core's depth-first strategy
// (search.DFS) over the choices of the scheduler, re-playing each
// schedule from the start. The team's consumer is its model (a
// search.Replayer): a walker plays a schedule on a database of its own and
// hands the core, at each decision point, the choices enabled there with
// their footprints, the state's name and the budget left; the core decides
// (the path's replay, the cut, the sleep sets, the state cache, the
// counts), shares the subtrees among the walkers and searches the
// preemption bounds in turn and the shortest prefix that breaks a law.
// This file plays the model: it judges each schedule and keeps the ends
// of quiet states and the counterexample.

// frame is one decision point on the path.
type frame = search.Frame[footprint]

// pointOf is the search's own record of a decision point (frame.Aux): the
// choices it was made of, the parts of its state's name and the steps
// before it, for a report of what differs when a run meets another state
// there.
type pointOf struct {
	ts    []trans
	parts []keyPart
	steps []Step
}

func pointAt(f *frame) *pointOf { return f.Aux.(*pointOf) }

// quietEnd is what the end of a schedule gave in a quiet state: the same
// state ends the same way.
type quietEnd struct {
	summary  string
	breaches []Breach
	// endSit are the situations the drain, the replay and the judge
	// reached after the schedule's steps.
	endSit map[string]int
}

// found is a counterexample.
type found struct {
	scenario    *Scenario
	breaches    []Breach
	preemptions int
	// cut is the prefix length of the level it was found at (zero: a
	// whole schedule), path its place in the search's order.
	cut  int
	path []int
}

// searcher is one verification: what every walker shares.
type searcher struct {
	c      Consumer
	cfg    config
	bounds Bounds
	fates  []Fate
	base   *Scenario

	sqlite bool
	// snapshot: the database's transactions read a snapshot taken at
	// their first read (see backend.Description).
	snapshot    bool
	tables      map[string]bool
	dumpQueries []string
	// pgName, on PostgreSQL, reads the state's name in one statement
	// while the catalog reads pgCatalog (see pgNameQuery).
	pgName, pgCatalog string
	complexSchema     bool
	// counters: the schema has counters that a rollback does not move
	// back (PostgreSQL's sequences; MySQL's AUTO_INCREMENT, assumed):
	// a write in a transaction may change the state's name even if the
	// transaction never commits.
	counters bool
	// lockFreeBegin: on SQLite, a BEGIN takes no lock (DEFERRED), so its
	// footprint leaves the database's lock out.
	lockFreeBegin bool
	// objects are what the schema made on SQLite (type and name, with
	// their SQL); ddl is set once a scenario made more (a Worker factory
	// or a handler creating a table or a trigger): from then on every
	// write touches everything, since a trigger may hide behind it.
	objects map[string]string
	ddl     atomic.Bool
	walkers []*walker
	// dfs is the search of the world, the searcher its model.
	dfs *search.DFS[footprint, budgets]

	// mu guards what follows: the level being searched.
	mu sync.Mutex
	// quiet holds the ends of quiet states, at the index in ends its key
	// maps to.
	quiet *search.Set
	ends  []*quietEnd
	// cutAt, in the search for a shorter counterexample, is the length of
	// the prefixes tried: each is completed by the harness's drain.
	cutAt int
	best  *found

	lvl   *VerifyLevel
	res   *VerifyResult
	start time.Time
}

// walker searches subtrees, one schedule at a time, on a database of its
// own.
type walker struct {
	*searcher
	// ch is the core's walker playing the schedule, which decides its
	// choices.
	ch      *search.Chooser[footprint, budgets]
	cfg     config
	stop    func()
	current *verifyRun
	// sc is the schedule played last; out is what the schedule played last came to; broke says it broke
	// a law (or met the end of a quiet state that did).
	sc    *Scenario
	out   *Outcome
	broke bool
	perm  []int
	// Buffers of the names of states.
	keyEnc, dbEnc, scratch, fpEnc enc
	// histScratch is the histories' own, written under the run's lock by
	// the goroutines whose calls return (see hook.Returned).
	histScratch enc
	// schemaVersion and addedQueries are what dumpAdded last read.
	schemaVersion int64
	addedQueries  []string
	shapes        map[string]sqlShape
	tupleEnc      []enc
	tuples        [][]byte
	lastDelivery  [][2]int64
	// fileBuf holds the database file last read to name a state, and
	// byFile the names of the database's content already read, by the
	// file's bytes (see dumpByFile).
	fileBuf []byte
	byFile  map[search.Key]search.Key
	// bases are the snapshots of the runs' starts, by the file's bytes
	// and the time (see baseSnapshot); baseEnc builds their keys.
	bases   map[search.Key]Snapshot
	baseEnc enc
	// moves is enabled's scratch: the workers' moves, copied into the
	// choices it returns.
	moves []trans
	// point is the decision point handed to the core, which keeps none
	// of it but, in a new frame, its choices, moves and parts. spareChoices,
	// spareMoves and spareAux are those of the last point no frame kept,
	// for the next point to fill (see decide).
	point        search.Point[footprint, budgets]
	spareChoices []trans
	spareMoves   []search.Move[footprint]
	spareAux     *pointOf
	// labels name a worker's parts of a state's name (see keyPart), by
	// the worker's name; placeBuf is key's scratch.
	labels   map[string]workerLabels
	placeBuf []byte
}

// workerLabels name a worker's parts of a state's name.
type workerLabels struct{ history, place string }

// labelsOf returns the labels of the worker named name.
func (w *walker) labelsOf(name string) workerLabels {
	if l, ok := w.labels[name]; ok {
		return l
	}
	l := workerLabels{
		history: "what the database returned to " + name + " (its history: every call's result and row)",
		place:   name + "'s place (its state, delivery and the call it waits at)",
	}
	if w.labels == nil {
		w.labels = map[string]workerLabels{}
	}
	w.labels[name] = l
	return l
}

// maxByFile bounds the names dumpByFile keeps: beyond it they are
// forgotten and read again.
const maxByFile = 1 << 16

// explore is Explore and Verify: the search of b, then of each of its
// Then, until one finds a counterexample or a budget runs out.
func explore(c Consumer, b Bounds, cfg config, name string) (VerifyResult, error) {
	if err := b.Validate(); err != nil {
		return VerifyResult{}, err
	}
	if c.Log != nil {
		if b.Log != nil {
			b = *b.Log
		}
		if err := validateLogBounds(b); err != nil {
			return VerifyResult{}, err
		}
		b = logWorld(b, c.Log)
		b.Then = slices.Clone(b.Then)
		for i := range b.Then {
			b.Then[i] = logWorld(b.Then[i], c.Log)
		}
	} else if b.Rebalances > 0 || b.Partitions > 0 || slices.ContainsFunc(b.Then, func(t Bounds) bool { return t.Rebalances > 0 || t.Partitions > 0 }) {
		return VerifyResult{}, fmt.Errorf("%w: bounds: rebalances and partitions are a log broker's; consumer %q reads a queue", ErrBadInput, c.displayName())
	}
	start := time.Now()
	worlds := append([]Bounds{b}, b.Then...)
	worlds[0].Then = nil
	var own []time.Duration
	if slices.ContainsFunc(worlds, func(w Bounds) bool { return w.ConsumerDurations }) {
		var err error
		if own, err = consumerDurations(c, cfg); err != nil {
			return VerifyResult{}, err
		}
	}
	total := VerifyResult{Consumer: c.displayName(), Backend: cfg.backend.Name(), Bounds: b.withDefaults(), PreemptionsExplored: -1, Coverage: map[string]int{},
		ConsumerDurations: own}
	for i, w := range worlds {
		wcfg := cfg
		if t := cfg.verify.timeBudget; t > 0 {
			wcfg.verify.timeBudget = max(t-time.Since(start), time.Millisecond)
		}
		if n := cfg.verify.maxSchedules; n > 0 {
			wcfg.verify.maxSchedules = max(n-total.Schedules, 1)
		}
		if w.ConsumerDurations {
			for _, d := range own {
				if !slices.Contains(w.Durations, d) {
					w.Durations = append(w.Durations, d)
				}
			}
		}
		r, err := exploreWorld(c, w, wcfg, name)
		if err != nil {
			return VerifyResult{}, err
		}
		total.add(r, i)
		if !r.Verified {
			break
		}
	}
	total.Elapsed = time.Since(start)
	return total, nil
}

// add takes the search of world i into the verification's result.
func (r *VerifyResult) add(w VerifyResult, i int) {
	r.Schedules += w.Schedules
	r.Judged += w.Judged
	r.Cut += w.Cut
	r.States += w.States
	r.SleepPruned += w.SleepPruned
	r.CachePruned += w.CachePruned
	r.BoundPruned += w.BoundPruned
	for k, n := range w.Coverage {
		r.Coverage[k] += n
	}
	for _, l := range w.Levels {
		l.World = i
		r.Levels = append(r.Levels, l)
	}
	r.World = i
	r.measureCache()
	r.Verified, r.Failed, r.Stopped, r.PreemptionsExplored = w.Verified, w.Failed, w.Stopped, w.PreemptionsExplored
	r.Law, r.Breaches, r.Scenario, r.Outcome = w.Law, w.Breaches, w.Scenario, w.Outcome
	r.Preemptions, r.Steps, r.Shortest, r.CorpusFile, r.Replay = w.Preemptions, w.Steps, w.Shortest, w.CorpusFile, w.Replay
	r.Shard, r.Order = w.Shard, w.Order
	if r.Order != nil {
		r.Order.World = i
	}
	for _, l := range w.ShardLevels {
		l.World = i
		r.ShardLevels = append(r.ShardLevels, l)
	}
}

// exploreWorld searches one world (bounds without Then): it starts the
// walkers' databases, then searches the preemption bounds in turn.
func exploreWorld(c Consumer, b Bounds, cfg config, name string) (VerifyResult, error) {
	n := max(cfg.verify.parallel, 1)
	s := &searcher{c: c, cfg: cfg, bounds: b.withDefaults(), fates: b.Events, base: b.scenario(), sqlite: cfg.backend.Name() == "sqlite"}
	s.lockFreeBegin = s.sqlite && beginTakesNoLock(cfg.backend)
	defer func() {
		for _, w := range s.walkers {
			w.stop()
		}
	}()
	for range n {
		wcfg := cfg
		stop, err := wcfg.start()
		if err != nil {
			return VerifyResult{}, err
		}
		s.walkers = append(s.walkers, &walker{searcher: s, cfg: wcfg, stop: stop, tupleEnc: make([]enc, b.Workers)})
	}
	first := s.walkers[0].cfg
	if err := preflight(c, &first); err != nil {
		return VerifyResult{}, err
	}
	for _, w := range s.walkers {
		w.cfg.schemaPrint = first.schemaPrint
	}
	if err := s.discover(first.backend); err != nil {
		return VerifyResult{}, err
	}
	b = s.bounds
	s.start = time.Now()
	s.dfs = &search.DFS[footprint, budgets]{Model: s, Walkers: n, MaxSteps: b.MaxSteps, NoPOR: cfg.verify.noPOR, Exhaustive: cfg.verify.exhaustive,
		Budget: search.Budget{Context: cfg.verify.ctx, Time: cfg.verify.timeBudget, Count: cfg.verify.maxSchedules, Unit: "schedule"}}
	s.dfs.Shard = cfg.verify.newShard()
	s.dfs.Start(s.start)
	res := VerifyResult{Consumer: c.displayName(), Backend: cfg.backend.Name(), Bounds: b, PreemptionsExplored: -1, Coverage: map[string]int{}}
	s.res = &res
	first0, top := 0, b.Preemptions
	if cfg.verify.exhaustive {
		first0 = top
	}
	explored, failed, err := s.dfs.Bounded(first0, top)
	if err != nil {
		return VerifyResult{}, err
	}
	res.PreemptionsExplored = explored
	if failed {
		res.Failed, res.Preemptions = true, s.best.preemptions
	}
	res.Verified = !res.Failed && s.dfs.Stopped == ""
	if res.Verified {
		res.PreemptionsExplored = b.Preemptions
	}
	if res.Failed {
		if err := s.counterexample(&res, name); err != nil {
			return VerifyResult{}, err
		}
	}
	res.Stopped = s.dfs.Stopped
	s.shardResult(&res)
	res.Schedules, res.States = s.dfs.Schedules, s.dfs.States
	res.SleepPruned, res.CachePruned, res.BoundPruned = s.dfs.SleepPruned, s.dfs.CachePruned, s.dfs.BoundPruned
	res.Elapsed = time.Since(s.start)
	res.measureCache()
	return res, nil
}

// Begin starts the search of a level (search.Replayer): its budget, and
// the quiet ends of the level before forgotten, as the budget they were
// met with differs.
func (s *searcher) Begin(bound, cut int) budgets {
	b := s.bounds
	budget := budgets{int16(b.Preemptions), int16(b.Crashes), int16(b.Failures), int16(b.Duplicates), int16(b.Advances), int16(b.Replays), int16(b.Rebalances)}
	budget[bPreempt] = int16(bound)
	if cut == 0 && s.cfg.verify.noPreemptionBound {
		budget[bPreempt] = 1000
	}
	if cut > 0 {
		s.best = nil
	}
	s.res.Levels = append(s.res.Levels, VerifyLevel{Preemptions: bound, PrefixSteps: cut})
	s.lvl = &s.res.Levels[len(s.res.Levels)-1]
	s.quiet, s.ends, s.cutAt = search.NewSet(), nil, cut
	return budget
}

// End takes what the core counted of the level into its row (see
// search.Replayer).
func (s *searcher) End(l *search.LevelTally) {
	v := s.lvl
	v.Complete, v.Schedules, v.States, v.Elapsed = l.Complete, l.Schedules, l.States, l.Elapsed
	v.SleepPruned, v.CachePruned, v.BoundPruned = l.SleepPruned, l.CachePruned, l.BoundPruned
	v.CacheBytes, v.CacheEntries = l.CacheBytes+s.quietBytes(), l.CacheEntries
	for d, t := range l.Depths {
		v.Depths = append(v.Depths, VerifyDepth{Depth: d, Nodes: t.Nodes, States: t.States, Transitions: t.Transitions, SleepPruned: t.SleepPruned, CachePruned: t.CachePruned})
	}
	if s.cfg.verify.exhaustive {
		s.best = nil
	}
}

// Covers reports whether budget a has at least what b has.
func (s *searcher) Covers(a, b budgets) bool { return a.covers(b) }

// measureCache sets BytesPerState from the levels' caches.
func (r *VerifyResult) measureCache() {
	var bytes, entries int64
	for _, l := range r.Levels {
		bytes += l.CacheBytes
		entries += l.CacheEntries
	}
	r.BytesPerState = 0
	if entries > 0 {
		r.BytesPerState = float64(bytes) / float64(entries)
	}
}

// quietBytes measures the memory of the level's ends of quiet states,
// counted from what they hold (the core measures its state cache).
func (s *searcher) quietBytes() (bytes int64) {
	bytes = s.quiet.Bytes()
	bytes += int64(cap(s.ends)) * int64(unsafe.Sizeof(&quietEnd{}))
	for _, q := range s.ends {
		bytes += int64(unsafe.Sizeof(*q)) + int64(len(q.summary)) + int64(cap(q.breaches))*int64(unsafe.Sizeof(Breach{}))
		for _, b := range q.breaches {
			bytes += int64(len(b.Summary) + len(b.Diff))
			for _, d := range b.Details {
				bytes += int64(unsafe.Sizeof(d)) + int64(len(d))
			}
		}
		for k := range q.endSit {
			// A map's slot per entry at its 7/8 load, and a control byte.
			bytes += int64((unsafe.Sizeof(k)+unsafe.Sizeof(0))*8/7) + 1 + int64(len(k))
		}
	}
	return bytes
}

// Play plays one schedule on walker i's database (search.Replayer): the
// path's prefix, then new choices, each decided by c.
func (s *searcher) Play(i int, c *search.Chooser[footprint, budgets]) error {
	w := s.walkers[i]
	w.ch, w.sc, w.out, w.broke = c, w.base.clone(), nil, false
	ctx := context.WithValue(context.Background(), verifyKey{}, w)
	w.current = nil
	out, err := w.play(ctx, w.sc)
	if err != nil {
		return err
	}
	if w.current == nil {
		return errors.New("consumertest: the search's run never started")
	}
	w.out = out
	return nil
}

// Judge judges the schedule walker i played last (search.Replayer; the
// core's lock held): its coverage, its verdict, the end of its quiet state.
func (s *searcher) Judge(i int) bool {
	w := s.walkers[i]
	v, out := w.current, w.out
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.cfg.verify.progress; f != nil && s.dfs.Schedules%2000 == 0 {
		f(VerifyProgress{Preemptions: s.lvl.Preemptions, Schedules: s.dfs.Schedules, States: s.dfs.States, Elapsed: time.Since(s.start)})
	}
	if v.abandoned {
		// Its steps reached what they reached: the rest of the schedule
		// is explored from the state it stopped at.
		s.covered(out.Situations)
		return w.broke
	}
	if v.cut && s.cutAt == 0 {
		s.res.Cut++
	}
	bs := Judge(s.c, out)
	sit := out.Situations
	if v.stopKeyOK {
		end := map[string]int{}
		for k, n := range sit {
			if d := n - v.atStop[k]; d > 0 {
				end[k] = d
			}
		}
		q := &quietEnd{summary: outcomeSummary(out, bs), breaches: bs, endSit: end}
		if i, ok := s.quiet.Get(v.stopKey); ok {
			s.ends[i] = q
		} else {
			s.quiet.Put(v.stopKey, int32(len(s.ends)))
			s.ends = append(s.ends, q)
		}
	}
	s.covered(sit)
	s.judged(outcomeSummary(out, bs))
	if len(bs) > 0 {
		s.candidate(w.sc, bs, v.preempted, w.ch.PathNow())
		w.broke = true
	}
	return w.broke
}

// play plays sc as the search's run, as replay does: in a testing/synctest
// bubble (so that the handler's clock is the scenario's) when one can be
// had.
func (w *walker) play(ctx context.Context, sc *Scenario) (*Outcome, error) {
	return playScenario(ctx, w.c, sc, w.cfg)
}

// covered counts the situations a schedule reached (s.mu held).
func (s *searcher) covered(sit map[string]int) {
	for k := range sit {
		s.res.Coverage[k]++
	}
}

// judged counts a schedule judged, or whose end state was judged before
// (s.mu held).
func (s *searcher) judged(summary string) {
	s.res.Judged++
	s.lvl.Judged++
	if f := s.cfg.verify.outcomes; f != nil {
		f(summary)
	}
}

// quietEnd returns what a quiet state gave before, if it was met.
func (s *searcher) quietEndOf(key search.Key) (*quietEnd, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.quiet.Get(key)
	if !ok {
		return nil, false
	}
	return s.ends[i], true
}

// quietHit counts a schedule that stopped in a quiet state judged before;
// its run is then abandoned, which counts the situations of its steps.
func (w *walker) quietHit(v *verifyRun, q *quietEnd) {
	s := w.searcher
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range q.endSit {
		if v.atStop[k] == 0 {
			s.res.Coverage[k]++
		}
	}
	s.judged(q.summary)
	if len(q.breaches) > 0 {
		s.candidate(v.r.s.clone(), q.breaches, v.preempted, w.ch.PathNow())
		w.broke = true
	}
}

// candidate keeps the first counterexample (s.mu held).
func (s *searcher) candidate(sc *Scenario, bs []Breach, preempted int, path []int) {
	if s.best == nil {
		s.best = &found{scenario: sc, breaches: bs, preemptions: preempted, cut: s.cutAt, path: path}
	}
}

// outcomeSummary is what a schedule came to: the laws it broke, the
// effects and the dead-letter queue once quiet, and the effects after the
// replay. The soundness tests compare sets of these.
func outcomeSummary(o *Outcome, bs []Breach) string {
	var b strings.Builder
	var laws []string
	for _, br := range bs {
		laws = append(laws, br.Law+":"+br.Summary)
	}
	fmt.Fprintf(&b, "laws %v; quiet %v %v; dlq", laws, o.Quiet.Rows, o.Quiet.Dedupe)
	for _, d := range o.DLQQuiet {
		fmt.Fprintf(&b, " %s/%d/%t", d.Key, d.Attempts, d.Poison)
	}
	fmt.Fprintf(&b, "; replayed %v", o.Replayed.Rows)
	return b.String()
}

// decide is called by a run at each decision point: it hands the point to
// the core, which returns the index of the choice to take among ts, or
// search.Abandon to stop the run short, or search.Cut to leave the rest
// to the drain.
func (w *walker) decide(v *verifyRun, ts []trans, boundPruned int, key search.Key, keyOK bool) int {
	moves := slices.Grow(w.spareMoves[:0], len(ts))[:len(ts)]
	for i, t := range ts {
		moves[i] = search.Move[footprint]{ID: t.id.move(), Footprint: t.fp, Own: t.id.workerMove(), Crash: t.id.kind == kCrash}
	}
	aux := w.spareAux
	if aux == nil {
		aux = &pointOf{}
	}
	*aux = pointOf{ts: ts, parts: append(aux.parts[:0], v.parts...), steps: v.r.s.Steps}
	p := &w.point
	*p = search.Point[footprint, budgets]{Moves: moves, Worker: v.cur, Movable: v.movable(v.cur), Key: key, KeyOK: keyOK,
		Budget: v.budget, Perm: w.perm, BoundPruned: boundPruned, Aux: aux, CanMove: v.movable}
	frames := len(w.ch.Path)
	i := w.ch.Choose(p)
	if len(w.ch.Path) > frames {
		// A new frame keeps the point's choices, moves and parts.
		w.spareChoices, w.spareMoves, w.spareAux = nil, nil, nil
	} else {
		// A point on the path's prefix (checked against the frame met
		// before), or one abandoned: nothing keeps it, and the next point
		// reuses its memory.
		w.spareChoices, w.spareMoves, w.spareAux = ts[:0], moves[:0], aux
	}
	return i
}

// Diverged explains why a run playing a path again met another decision
// point (search.Replayer): the consumer is not deterministic.
func (s *searcher) Diverged(f *frame, p *search.Point[footprint, budgets], d int) error {
	was, now := pointAt(f), p.Aux.(*pointOf)
	what := fmt.Sprintf("the choices differ: %s, then %s", describeChoices(was.ts), describeChoices(now.ts))
	if sameChoices(was.ts, now.ts) {
		what = "what differs: " + strings.Join(differing(was.parts, now.parts), "; ")
	}
	return fmt.Errorf("%w: consumer %q is not deterministic: the same schedule, played again, reached another state after %d step(s) (%s) of %s; "+
		"a consumer whose moves depend on something other than what the database returned to it (the machine's clock, randomness, a file, a remote service not behind handler.Point) cannot be model-checked: switch state caching off with NoCache to search it anyway",
		ErrBadInput, s.c.displayName(), d, what, describeSteps(now.steps))
}

// describeSteps renders a schedule's steps for a report.
func describeSteps(steps []Step) string {
	parts := make([]string, len(steps))
	for i, st := range steps {
		parts[i] = st.String()
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func sameChoices(a, b []trans) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].id != b[i].id {
			return false
		}
	}
	return true
}

func describeChoices(ts []trans) string {
	var parts []string
	for _, t := range ts {
		parts = append(parts, t.step.String())
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// reductionMutants are the ways a test breaks the reductions on purpose:
// the soundness tests must catch each. One more is PostgreSQL's alone,
// "key-ignores-sequences" (a state's name without its sequences), and
// TestPostgresSequencesNameTheState catches it.
var reductionMutants = []string{"commute-all", "no-cost-check", "key-ignores-db", "key-ignores-history", "key-ignores-broker",
	"symmetry-ignores-identity", "crash-undoes-anything", "idle-fold-ignores-identity"}

// beginTakesNoLock reports whether the backend's BEGIN takes no lock (a
// DEFERRED one on SQLite): its footprint then leaves the lock out.
// Backends that do not say take it.
func beginTakesNoLock(be backend.Backend) bool {
	d, ok := be.(interface{ BeginTakesNoLock() bool })
	return ok && d.BeginTakesNoLock()
}

// symmetric reports whether the workers are interchangeable, so that a
// state's name sorts them (see verifyRun.key): the workers of a Handler
// are (the handler is given a message and the database, never its
// worker's name, and each worker's connection is named by its history);
// those a Worker factory builds are not, as the factory is given its
// worker's name and may keep it (a lease owner, a shard). A test breaks
// this on purpose.
func (s *searcher) symmetric() bool {
	if s.cfg.verify.noSymmetry || s.c.Log != nil {
		// On a log the workers are not interchangeable: the broker's
		// state names the owner of each partition.
		return false
	}
	return s.c.Worker == nil || s.cfg.verify.mutant == "symmetry-ignores-identity"
}

// Conflicts reports whether two choices' footprints conflict
// (search.Replayer): conflicts, but where a test breaks it on purpose.
func (s *searcher) Conflicts(a, b footprint) bool {
	switch s.cfg.verify.mutant {
	case "commute-all":
		return (a.ws|a.rs)&(b.ws|b.rs)&(resOwn0*0xff) != 0
	}
	return conflicts(a, b)
}

// CostSafe is search.CostSafe (search.Replayer), but where a test breaks
// it on purpose.
func (s *searcher) CostSafe(f *search.Frame[footprint], z search.Sleeper[footprint], t search.Move[footprint]) bool {
	return s.cfg.verify.mutant == "no-cost-check" || search.CostSafe(f, z, t)
}

// discover reads the tables the schema made, on a database of its own:
// the statements' footprints name them, and a state's name reads them.
func (s *searcher) discover(be backend.Backend) error {
	ctx := context.Background()
	db, err := be.Fresh(ctx)
	if err != nil {
		return fmt.Errorf("%w: open a fresh %s database: %w", ErrBadInput, be.Name(), err)
	}
	defer db.Close()
	if err := prepareSchema(ctx, db, s.c); err != nil {
		return err
	}
	lower := strings.ToLower(s.c.Schema)
	for _, w := range []string{"trigger", "references", "foreign key", "create rule"} {
		if strings.Contains(lower, w) {
			s.complexSchema = true
		}
	}
	s.tables = map[string]bool{}
	admin := db.Admin()
	if s.sqlite {
		return s.discoverSQLite(ctx, admin)
	}
	if d, ok := db.(backend.Describer); ok {
		desc, err := d.Describe(ctx)
		if err != nil {
			return fmt.Errorf("consumertest: read the schema's tables: %w", err)
		}
		for _, t := range desc.Tables {
			s.tables[t] = true
		}
		s.dumpQueries, s.snapshot, s.counters = desc.Queries, desc.Snapshot, true
		return nil
	}
	return s.discoverPostgres(ctx, admin)
}

func (s *searcher) discoverSQLite(ctx context.Context, admin *sql.DB) error {
	s.objects = map[string]string{}
	rows, err := readRows(ctx, admin, `SELECT type, name, coalesce(sql, '') FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' OR name = 'sqlite_sequence' ORDER BY name`)
	if err != nil {
		return fmt.Errorf("consumertest: read the schema's tables: %w", err)
	}
	for _, row := range rows {
		typ, name, text := row[0], row[1], strings.ToLower(row[2])
		s.objects[typ+"\x00"+name] = sqlclock.Unkeyed(row[2])
		if typ == "trigger" {
			s.complexSchema = true
			continue
		}
		if typ != "table" {
			continue
		}
		if name == "sqlite_sequence" {
			s.dumpQueries = append(s.dumpQueries, `SELECT name, seq FROM sqlite_sequence ORDER BY name`)
			continue
		}
		if strings.HasPrefix(name, "sqlite_") {
			continue
		}
		s.tables[strings.ToLower(name)] = true
		quoted := `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
		if strings.Contains(text, "without rowid") {
			cols, err := columnCount(ctx, admin, "SELECT * FROM "+quoted+" LIMIT 0")
			if err != nil {
				return err
			}
			s.dumpQueries = append(s.dumpQueries, "SELECT * FROM "+quoted+" ORDER BY "+ordinals(cols))
			continue
		}
		s.dumpQueries = append(s.dumpQueries, "SELECT rowid, * FROM "+quoted+" ORDER BY rowid")
	}
	return nil
}

// pgTablesQuery lists the tables and sequences of every schema the team's
// code made (the run's database is its own), the harness's and the
// server's left out.
const pgTablesQuery = `SELECT c.relkind::text, n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'idemcheck') AND n.nspname NOT LIKE 'pg_toast%' AND n.nspname NOT LIKE 'pg_temp%'
AND c.relkind IN ('r', 'p', 'S') ORDER BY n.nspname, c.relname`

func (s *searcher) discoverPostgres(ctx context.Context, admin *sql.DB) error {
	queries, err := pgDumpQueries(ctx, admin, s.tables)
	if err != nil {
		return err
	}
	s.dumpQueries = queries
	s.counters = slices.ContainsFunc(queries, func(q string) bool { return strings.HasPrefix(q, pgSequenceQuery) })
	// Where the backend notes the DDL a scenario commits (its event
	// triggers fill idemcheck.ddl, emptied by every reset), nothing noted
	// means the catalog is the schema's: a count says it, where reading
	// the catalog cost the server more than the rows.
	catalogQuery := pgCatalogQuery
	var watched bool
	if err := scanOne(admin, "SELECT to_regclass('idemcheck.ddl') IS NOT NULL", &watched); err != nil {
		return fmt.Errorf("consumertest: read the schema's tables: %w", err)
	}
	if watched {
		catalogQuery = pgWatchQuery
	}
	var catalog sql.NullString
	if err := scanOne(admin, catalogQuery, &catalog); err != nil {
		return fmt.Errorf("consumertest: read the schema's tables: %w", err)
	}
	s.pgName, s.pgCatalog = pgNameQuery(catalogQuery, queries, s.cfg.verify.mutant != "key-ignores-sequences"), catalog.String
	return nil
}

// pgWatchQuery counts the DDL the backend noted since the last reset.
const pgWatchQuery = `SELECT count(*)::text FROM idemcheck.ddl`

// pgCatalogQuery lists, in one value, the tables and sequences of
// pgTablesQuery with each table's number of columns: while it reads as it
// did when the schema was made, the dump queries read everything a state
// holds (no table or column added, none dropped).
const pgCatalogQuery = `SELECT string_agg(c.relkind::text || ' ' || quote_ident(n.nspname) || '.' || quote_ident(c.relname) || ' ' ||
  (SELECT count(*) FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped), ',' ORDER BY n.nspname, c.relname)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'idemcheck') AND n.nspname NOT LIKE 'pg_toast%' AND n.nspname NOT LIKE 'pg_temp%'
AND c.relkind IN ('r', 'p', 'S')`

// pgNameQuery is the one statement that names a PostgreSQL state: the
// catalog (pgCatalogQuery, or pgWatchQuery where DDL is noted), then each dump query's rows as one text value
// (every row as its record's text, sorted byte-wise; a sequence's
// last_value and is_called). One round trip instead of one per table and
// three for the catalog, and the server plans each part once. Without
// sequences (a test's mutant) each sequence reads as NULL.
func pgNameQuery(catalog string, dumps []string, sequences bool) string {
	var b strings.Builder
	b.WriteString("SELECT (" + catalog + ")")
	for _, q := range dumps {
		if rel, ok := strings.CutPrefix(q, pgSequenceQuery); ok {
			if !sequences {
				b.WriteString(", NULL")
				continue
			}
			b.WriteString(", (SELECT ROW(last_value, is_called)::text FROM " + rel + ")")
			continue
		}
		rel, _, _ := strings.Cut(strings.TrimPrefix(q, "SELECT * FROM "), " ORDER BY ")
		b.WriteString(`, (SELECT array_agg(v ORDER BY v)::text FROM (SELECT ROW(x.*)::text COLLATE "C" AS v FROM ` + rel + " x) y)")
	}
	return b.String()
}

// pgSequenceQuery reads a sequence (its name follows).
const pgSequenceQuery = "SELECT last_value, is_called FROM "

// pgDumpQueries are the queries that read every table and sequence of the
// team's schemas, row for row; tables, when not nil, learns their names.
func pgDumpQueries(ctx context.Context, admin *sql.DB, tables map[string]bool) ([]string, error) {
	rows, err := readRows(ctx, admin, pgTablesQuery)
	if err != nil {
		return nil, fmt.Errorf("consumertest: read the schema's tables: %w", err)
	}
	var out []string
	for _, row := range rows {
		kind, schema, name := row[0], row[1], row[2]
		quoted := `"` + strings.ReplaceAll(schema, `"`, `""`) + `"."` + strings.ReplaceAll(name, `"`, `""`) + `"`
		if kind == "S" {
			out = append(out, pgSequenceQuery+quoted)
			continue
		}
		if tables != nil {
			tables[strings.ToLower(name)] = true
			if schema != "public" {
				tables[strings.ToLower(schema+"."+name)] = true
			}
		}
		cols, err := columnCount(ctx, admin, "SELECT * FROM "+quoted+" LIMIT 0")
		if err != nil {
			return nil, err
		}
		out = append(out, "SELECT * FROM "+quoted+" ORDER BY "+ordinals(cols))
	}
	return out, nil
}

func columnCount(ctx context.Context, db *sql.DB, q string) (int, error) {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return 0, fmt.Errorf("consumertest: %s: %w", q, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	return len(cols), err
}

func ordinals(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprint(i + 1)
	}
	return strings.Join(parts, ", ")
}

// footprintOf is what statement c touches, read once per statement text
// and arguments.
func (w *walker) footprintOf(c sqlhook.Call) sqlShape {
	e := &w.fpEnc
	e.reset()
	e.str(c.SQL)
	for _, a := range c.Args {
		e.str(a.Name)
		e.int(int64(a.Ordinal))
		e.value(a.Value)
	}
	if sh, ok := w.shapes[string(e.b)]; ok {
		return sh
	}
	sh := statementFootprint(c.SQL, c.Args, w.tables)
	if w.shapes == nil {
		w.shapes = map[string]sqlShape{}
	}
	w.shapes[string(e.b)] = sh
	return sh
}

// dump names the database's committed content: every row of every table.
func (w *walker) dump(r *run) (search.Key, error) {
	e := &w.dbEnc
	e.reset()
	if w.sqlite {
		if fr, ok := r.db.(backend.FileReader); ok {
			return w.dumpByFile(r, fr)
		}
		if err := w.dumpSQLite(r.db.Admin(), e); err != nil {
			return search.Key{}, err
		}
		return sumOf(e.b), nil
	}
	admin := r.db.Admin()
	if w.pgName != "" {
		named, err := w.namePostgres(admin, e)
		if err != nil {
			return search.Key{}, err
		}
		if named {
			return sumOf(e.b), nil
		}
		// The scenario changed the schema: read it table by table.
		e.reset()
	}
	for _, q := range w.dumpQueries {
		if err := encodeRows(admin, q, e); err != nil {
			return search.Key{}, err
		}
	}
	if err := w.dumpAddedCatalog(r.db, e); err != nil {
		return search.Key{}, err
	}
	return sumOf(e.b), nil
}

// dumpByFile names a SQLite database's content by its file when it can
// (see backend.FileReader): the bytes of the file, hashed, find the name
// read before from the same bytes, and only a file not met before is read
// through the engine (dumpSQLite). The name is the same: the content read
// is the file's, and the same bytes hold the same content.
func (w *walker) dumpByFile(r *run, fr backend.FileReader) (search.Key, error) {
	e := &w.dbEnc
	b, ok := fr.ReadState(w.fileBuf[:0])
	w.fileBuf = b
	var fk search.Key
	if ok {
		fk = sumOf(b)
		if sum, hit := w.byFile[fk]; hit {
			return sum, nil
		}
	}
	if err := w.dumpSQLite(r.db.Admin(), e); err != nil {
		return search.Key{}, err
	}
	sum := sumOf(e.b)
	if ok {
		if w.byFile == nil || len(w.byFile) >= maxByFile {
			w.byFile = make(map[search.Key]search.Key)
		}
		w.byFile[fk] = sum
	}
	return sum, nil
}

// baseSnapshot is snapshot at a run's start. Under Verify, on a database
// whose file can be read as its state (backend.FileReader), the snapshot
// read before from the same bytes at the same time of the scenario's clock
// (the database's own) is the run's: the effects, dedupe and dead-letter
// queries read the same rows. (A database reset between schedules starts
// every one from the same bytes.)
func baseSnapshot(ctx context.Context, r *run, c Consumer) (Snapshot, error) {
	w, _ := ctx.Value(verifyKey{}).(*walker)
	fr, ok := r.db.(backend.FileReader)
	if w == nil || !ok {
		return snapshot(ctx, r.db, c)
	}
	b, ok := fr.ReadState(w.fileBuf[:0])
	w.fileBuf = b
	if !ok {
		return snapshot(ctx, r.db, c)
	}
	e := &w.baseEnc
	e.reset()
	e.sum(sumOf(b))
	e.int(r.clock.NowMs())
	e.str(c.Effects.Query)
	e.str(c.Dedupe)
	e.str(c.DeadLetters)
	k := sumOf(e.b)
	if snap, hit := w.bases[k]; hit {
		return snap.clone(), nil
	}
	snap, err := snapshot(ctx, r.db, c)
	if err != nil {
		return snap, err
	}
	if w.bases == nil || len(w.bases) >= maxByFile {
		w.bases = make(map[search.Key]Snapshot)
	}
	w.bases[k] = snap.clone()
	return snap, nil
}

// clone is s with slices of its own (the rows' values shared: nobody
// writes them).
func (s Snapshot) clone() Snapshot {
	return Snapshot{Rows: slices.Clone(s.Rows), Dedupe: slices.Clone(s.Dedupe), DeadLetters: slices.Clone(s.DeadLetters), missing: slices.Clone(s.missing), order: slices.Clone(s.order)}
}

// namePostgres names a PostgreSQL state in one statement (pgNameQuery);
// it reports false, having encoded nothing worth keeping, when the
// catalog is not the schema's any more.
func (w *walker) namePostgres(admin *sql.DB, e *enc) (bool, error) {
	vals := make([]sql.NullString, len(w.dumpQueries)+1)
	ptrs := make([]any, len(vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := admin.QueryRowContext(context.Background(), w.pgName).Scan(ptrs...); err != nil {
		return false, err
	}
	if vals[0].String != w.pgCatalog {
		return false, nil
	}
	for _, v := range vals[1:] {
		if !v.Valid {
			e.byte('n')
			continue
		}
		e.byte('v')
		e.str(v.String)
	}
	return true, nil
}

// dumpSQLite reads a SQLite database's content in one read transaction
// (BEGIN, deferred whatever the team's _txlock, then ROLLBACK) on one
// connection: the engine takes its SHARED lock and checks the file once,
// not at every statement (three file-lock calls, a look for a hot journal
// and a read of the header each time). What it reads is the same: nobody
// commits while the harness names a state, and a worker's lock that
// keeps a reader out keeps out the first statement as it did.
func (w *walker) dumpSQLite(admin *sql.DB, e *enc) (err error) {
	ctx := context.Background()
	conn, err := admin.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
		return err
	}
	defer func() {
		if _, rerr := conn.ExecContext(ctx, "ROLLBACK"); err == nil {
			err = rerr
		}
	}()
	for _, q := range w.dumpQueries {
		if err := encodeRows(conn, q, e); err != nil {
			return err
		}
	}
	return w.dumpAdded(conn, e)
}

// querier is a database or one of its connections.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// dumpAddedCatalog adds to a state's name the tables and sequences a
// scenario created on PostgreSQL (or a Describer) beyond the schema's
// (the catalog is read at every name: states are named only between
// transactions there, and such a search is slow anyway).
func (w *walker) dumpAddedCatalog(db backend.Database, e *enc) error {
	admin := db.Admin()
	var queries []string
	if d, ok := db.(backend.Describer); ok {
		desc, err := d.Describe(context.Background())
		if err != nil {
			return err
		}
		queries = desc.Queries
	} else {
		var err error
		if queries, err = pgDumpQueries(context.Background(), admin, nil); err != nil {
			return err
		}
	}
	for _, q := range queries {
		if slices.Contains(w.dumpQueries, q) {
			continue
		}
		w.ddl.Store(true)
		if err := encodeRows(admin, q, e); err != nil {
			return err
		}
	}
	return nil
}

// dumpAdded adds to a state's name what the scenario created on SQLite
// beyond the schema (see searcher.objects): the objects themselves and
// the rows of the tables among them. PRAGMA schema_version tells when to
// look again.
func (w *walker) dumpAdded(admin querier, e *enc) error {
	var version int64
	if err := scanOne(admin, "PRAGMA schema_version", &version); err != nil {
		return err
	}
	if version != w.schemaVersion || w.addedQueries == nil {
		rows, err := readRows(context.Background(), admin, `SELECT type, name, coalesce(sql, '') FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name`)
		if err != nil {
			return err
		}
		w.addedQueries = []string{}
		for _, row := range rows {
			if sql, ok := w.objects[row[0]+"\x00"+row[1]]; ok && sql == sqlclock.Unkeyed(row[2]) {
				continue
			}
			w.ddl.Store(true)
			if len(w.addedQueries) == 0 {
				w.addedQueries = append(w.addedQueries, masterQuery)
			}
			if row[0] == "table" {
				quoted := `"` + strings.ReplaceAll(row[1], `"`, `""`) + `"`
				if strings.Contains(strings.ToLower(row[2]), "without rowid") {
					w.addedQueries = append(w.addedQueries, "SELECT * FROM "+quoted)
				} else {
					w.addedQueries = append(w.addedQueries, "SELECT rowid, * FROM "+quoted+" ORDER BY rowid")
				}
			}
		}
		w.schemaVersion = version
	}
	for _, q := range w.addedQueries {
		if q == masterQuery {
			// The objects' SQL names the database's own clock key (see
			// sqlclock): the same state on two walkers' databases must
			// have the same name.
			rows, err := readRows(context.Background(), admin, q)
			if err != nil {
				return err
			}
			e.str(q)
			for _, row := range rows {
				e.byte('r')
				for _, v := range row {
					e.str(sqlclock.Unkeyed(v))
				}
			}
			continue
		}
		if err := encodeRows(admin, q, e); err != nil {
			return err
		}
	}
	return nil
}

// scanOne reads the one value of a query's one row into dst.
func scanOne(db querier, q string, dst any) error {
	rows, err := db.QueryContext(context.Background(), q)
	if err != nil {
		return err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	if err := rows.Scan(dst); err != nil {
		return err
	}
	return rows.Close()
}

// masterQuery lists a SQLite database's own objects.
const masterQuery = `SELECT type, name, coalesce(sql, '') FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name`

func encodeRows(db querier, q string, e *enc) error {
	rows, err := db.QueryContext(context.Background(), q)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	e.str(q)
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		e.byte('r')
		for _, v := range vals {
			e.value(v)
		}
	}
	return rows.Err()
}

// counterexample turns the schedule found into the counterexample to
// show: cut to its shortest prefix that the drain completes into a breach
// of the same law; then every prefix with no more preemptions and no more
// steps is tried, each completed by the drain, shortest first, on one
// walker (the first that breaks a law wins: the same whichever schedule
// the walkers found first); then reduced unless NoReduce, and saved.
func (s *searcher) counterexample(res *VerifyResult, name string) error {
	cfg := s.walkers[0].cfg
	best := s.best
	law := best.breaches[0].Law
	sc, r := s.shortestPrefix(cfg, best.scenario, law)
	if r == nil {
		return fmt.Errorf("%w: consumer %q is not deterministic: the schedule that broke %s does not break it when played again", ErrBadInput, s.c.displayName(), law)
	}
	res.Order = orderOf(best, best.preemptions)
	found, complete, err := s.dfs.Shortest(best.preemptions, sc.Size())
	if err != nil {
		return err
	}
	res.Shortest = complete
	if found {
		res.Order = orderOf(s.best, best.preemptions)
		law = s.best.breaches[0].Law
		if p, pr := s.shortestPrefix(cfg, s.best.scenario, law); pr != nil {
			sc, r = p, pr
		}
	}
	res.Steps = sc.Size()
	keep := stillFails(s.c, cfg, law)
	if !cfg.noReduce {
		if red, rr := Reduce(sc, keep); rr != nil {
			sc, r = red, rr
		}
	}
	if err := confirmFresh(s.c, cfg, Result{Law: law, Scenario: sc, Outcome: r.Outcome}); err != nil {
		return err
	}
	res.Law, res.Breaches, res.Scenario, res.Outcome = law, r.Breaches, sc, r.Outcome
	if cfg.corpusDir != "" {
		path, err := SaveScenario(cfg.corpusDir, s.c.displayName(), law, res.Summary(), sc, r.Outcome, 0)
		if err != nil {
			return fmt.Errorf("consumertest: save the counterexample: %w", err)
		}
		res.CorpusFile, res.Replay = path, replayCommand(path, name)
	}
	return nil
}

// shortestPrefix is the shortest prefix of sc that, completed by the
// drain, breaks law, and its judged result (nil when none does).
func (s *searcher) shortestPrefix(cfg config, sc *Scenario, law string) (*Scenario, *Result) {
	keep := stillFails(s.c, cfg, law)
	for k := 0; k <= len(sc.Steps); k++ {
		p := sc.clone()
		p.Steps = p.Steps[:k]
		if len(p.Steps) == 0 {
			p.Steps = nil
		}
		if r := keep(p); r != nil {
			return p, r
		}
	}
	return nil, nil
}
