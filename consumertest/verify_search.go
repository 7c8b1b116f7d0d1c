package consumertest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/idemcheck/idemcheck/faults/sqlhook"
)

// The search of Verify: a stateless depth-first search over the choices
// of the scheduler, re-playing each schedule from the start (CHESS,
// loom). The path is the stack of decision points of the schedule being
// played; a run re-plays its prefix and decides the rest, then the search
// backtracks to the deepest point with a choice left to try.

const (
	decideAbandon = -1
	decideCut     = -2
)

// frame is one decision point on the path.
type frame struct {
	ts []trans
	// tried marks the choices explored (or being explored: cur).
	tried []bool
	cur   int
	// after is, per choice tried, whether its worker could still move
	// after it (-1: not known): what the cost check of a sleeping choice
	// needs.
	after []int8
	sleep []sleepEntry
	// curW is the worker the schedule was on at this point, and curMov
	// whether it could move.
	curW   int
	curMov bool
	// key names the state here (keyOK: it could be named): a run that
	// plays the path again must meet the same states.
	key   sum128
	keyOK bool
}

// sleepEntry is a choice asleep: its other order was explored already.
type sleepEntry struct {
	id    tid
	fp    footprint
	after int8
}

// visit is one exploration of a named state.
type visit struct {
	budget budgets
	sleep  []tid // in the state's canonical worker order
	depth  int
}

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
}

type searcher struct {
	c      Consumer
	cfg    config
	bounds Bounds
	fates  []Fate
	base   *Scenario
	budget budgets

	sqlite        bool
	tables        map[string]bool
	dumpQueries   []string
	complexSchema bool
	perm          []int
	// Buffers of the names of states.
	keyEnc, dbEnc, scratch, fpEnc enc
	shapes                        map[string]sqlShape
	tupleEnc                      []enc
	tuples                        [][]byte
	lastDelivery                  [][2]int64

	current *verifyRun
	path    []*frame
	cache   map[sum128][]visit
	quiet   map[sum128]*quietEnd
	// cutAt, in the search for a shorter counterexample, is the length of
	// the prefixes tried: each is completed by the harness's drain.
	cutAt int
	best  *found
	err   error

	lvl      *VerifyLevel
	res      *VerifyResult
	start    time.Time
	deadline time.Time
	stopped  string
}

func (s *searcher) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

// explore is Explore and Verify.
func explore(c Consumer, b Bounds, cfg config, name string) (VerifyResult, error) {
	if err := b.Validate(); err != nil {
		return VerifyResult{}, err
	}
	if err := preflight(c, cfg.backend); err != nil {
		return VerifyResult{}, err
	}
	b = b.withDefaults()
	s := &searcher{c: c, cfg: cfg, bounds: b, fates: b.Events, base: b.scenario(), sqlite: cfg.backend.Name() == "sqlite",
		tupleEnc: make([]enc, b.Workers)}
	s.budget = budgets{int16(b.Preemptions), int16(b.Crashes), int16(b.Failures), int16(b.Duplicates), int16(b.Advances), int16(b.Replays)}
	if cfg.verify.noPreemptionBound {
		s.budget[bPreempt] = 1000
	}
	if err := s.discover(); err != nil {
		return VerifyResult{}, err
	}
	s.start = time.Now()
	if cfg.verify.timeBudget > 0 {
		s.deadline = s.start.Add(cfg.verify.timeBudget)
	}
	res := VerifyResult{Consumer: c.displayName(), Backend: cfg.backend.Name(), Bounds: b, PreemptionsExplored: -1, Coverage: map[string]int{}}
	s.res = &res
	first, top := 0, b.Preemptions
	if cfg.verify.exhaustive {
		first = top
	}
	for k := first; k <= top; k++ {
		s.budget[bPreempt] = int16(k)
		if cfg.verify.noPreemptionBound {
			s.budget[bPreempt] = 1000
		}
		if err := s.level(k, 0); err != nil {
			return VerifyResult{}, err
		}
		if cfg.verify.exhaustive {
			s.best = nil
		}
		if s.best != nil {
			res.Failed, res.Preemptions = true, s.best.preemptions
			break
		}
		if s.stopped != "" {
			break
		}
		res.PreemptionsExplored = k
	}
	res.Stopped = s.stopped
	res.Verified = !res.Failed && s.stopped == ""
	if res.Verified {
		res.PreemptionsExplored = b.Preemptions
	}
	if res.Failed {
		if err := s.counterexample(&res, name); err != nil {
			return VerifyResult{}, err
		}
	}
	res.Stopped = s.stopped
	res.Elapsed = time.Since(s.start)
	return res, nil
}

// level searches every schedule with at most k preemptions; with cutAt
// set, every prefix of cutAt steps with at most k preemptions, each
// completed by the drain (without state caching: two states alike but
// for their workers' names drain differently).
func (s *searcher) level(k, cutAt int) error {
	s.res.Levels = append(s.res.Levels, VerifyLevel{Preemptions: k, PrefixSteps: cutAt})
	s.lvl = &s.res.Levels[len(s.res.Levels)-1]
	start := time.Now()
	defer func() { s.lvl.Elapsed = time.Since(start) }()
	s.path, s.cache, s.quiet, s.cutAt = nil, map[sum128][]visit{}, map[sum128]*quietEnd{}, cutAt
	for {
		if why := s.budgetSpent(); why != "" {
			s.stopped = why
			return nil
		}
		if err := s.execute(); err != nil {
			return err
		}
		if s.best != nil && !s.cfg.verify.exhaustive {
			return nil
		}
		if !s.backtrack() {
			s.lvl.Complete = true
			return nil
		}
	}
}

// budgetSpent says why the search must stop now, if it must.
func (s *searcher) budgetSpent() string {
	v := s.cfg.verify
	switch {
	case v.ctx != nil && v.ctx.Err() != nil:
		return "interrupted"
	case !s.deadline.IsZero() && time.Now().After(s.deadline):
		return fmt.Sprintf("the time budget (%s) ran out", v.timeBudget)
	case v.maxSchedules > 0 && s.res.Schedules >= v.maxSchedules:
		return fmt.Sprintf("the schedule budget (%d) ran out", v.maxSchedules)
	}
	return ""
}

// execute plays one schedule: the path's prefix, then new choices.
func (s *searcher) execute() error {
	sc := s.base.clone()
	ctx := context.WithValue(context.Background(), verifyKey{}, s)
	s.current = nil
	out, err := s.play(ctx, sc)
	if err != nil {
		return err
	}
	if s.err != nil {
		return s.err
	}
	v := s.current
	if v == nil {
		return errors.New("consumertest: the search's run never started")
	}
	s.res.Schedules++
	s.lvl.Schedules++
	if f := s.cfg.verify.progress; f != nil && s.res.Schedules%2000 == 0 {
		f(VerifyProgress{Preemptions: s.lvl.Preemptions, Schedules: s.res.Schedules, States: s.res.States, Elapsed: time.Since(s.start)})
	}
	if v.abandoned {
		// Its steps reached what they reached: the rest of the schedule
		// is explored from the state it stopped at.
		s.covered(out.Situations)
		return nil
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
		s.quiet[v.stopKey] = &quietEnd{summary: outcomeSummary(out, bs), breaches: bs, endSit: end}
	}
	s.covered(sit)
	s.judged(outcomeSummary(out, bs))
	if len(bs) > 0 {
		s.candidate(sc, bs, v.preempted)
	}
	return nil
}

// play plays sc as the search's run: in a testing/synctest bubble under
// Verify (so that the handler's clock is the scenario's), as replay does.
func (s *searcher) play(ctx context.Context, sc *Scenario) (*Outcome, error) {
	if s.cfg.t == nil {
		return play(ctx, s.cfg.backend, s.c, sc, false)
	}
	var out *Outcome
	var err error
	func() {
		defer func() {
			// Goroutines the handler left blocked make the bubble panic
			// as it ends; the run has reported them already.
			if p := recover(); p != nil {
				if out == nil || out.Failure == nil || out.Failure.Summary != "handler-goroutines" {
					panic(p)
				}
			}
		}()
		synctest.Test(s.cfg.t, func(*testing.T) {
			out, err = play(ctx, s.cfg.backend, s.c, sc, true)
		})
	}()
	return out, err
}

// covered counts the situations a schedule reached.
func (s *searcher) covered(sit map[string]int) {
	for k := range sit {
		s.res.Coverage[k]++
	}
}

// judged counts a schedule judged (or whose end state was judged before).
func (s *searcher) judged(summary string) {
	s.res.Judged++
	s.lvl.Judged++
	if f := s.cfg.verify.outcomes; f != nil {
		f(summary)
	}
}

// quietHit counts a schedule that stopped in a quiet state judged before;
// its run is then abandoned, which counts the situations of its steps.
func (s *searcher) quietHit(v *verifyRun, q *quietEnd) {
	for k := range q.endSit {
		if v.atStop[k] == 0 {
			s.res.Coverage[k]++
		}
	}
	s.judged(q.summary)
	if len(q.breaches) > 0 {
		s.candidate(v.r.s.clone(), q.breaches, v.preempted)
	}
}

// candidate keeps the first counterexample.
func (s *searcher) candidate(sc *Scenario, bs []Breach, preempted int) {
	if s.best == nil {
		s.best = &found{scenario: sc, breaches: bs, preemptions: preempted}
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

// backtrack moves the path to the next choice to try; false when every
// choice of every point on it was tried.
func (s *searcher) backtrack() bool {
	for len(s.path) > 0 {
		f := s.path[len(s.path)-1]
		f.tried[f.cur] = true
		for i := range f.ts {
			if !f.tried[i] && !asleep(f.sleep, f.ts[i].id) {
				f.cur = i
				s.depthRow(len(s.path)-1).Transitions++
				return true
			}
		}
		s.path = s.path[:len(s.path)-1]
	}
	return false
}

func asleep(sleep []sleepEntry, id tid) bool {
	for _, z := range sleep {
		if z.id == id {
			return true
		}
	}
	return false
}

// depthRow is the level's row of depth d.
func (s *searcher) depthRow(d int) *VerifyDepth {
	for len(s.lvl.Depths) <= d {
		s.lvl.Depths = append(s.lvl.Depths, VerifyDepth{Depth: len(s.lvl.Depths)})
	}
	return &s.lvl.Depths[d]
}

// decide is called by a run at each decision point: it returns the index
// of the choice to take among ts, or decideAbandon to stop the run short,
// or decideCut to leave the rest to the drain.
func (s *searcher) decide(v *verifyRun, ts []trans, boundPruned int, key sum128, keyOK bool) int {
	d := v.depth
	if d < len(s.path) {
		f := s.path[d]
		if !sameChoices(f.ts, ts) || (f.keyOK && keyOK && f.key != key) {
			s.fail(fmt.Errorf("%w: consumer %q is not deterministic: the same schedule, played again, reached another state at step %d (choices %s, then %s); "+
				"a handler that reads the machine's clock, randomness or state outside the database cannot be model-checked",
				ErrBadInput, s.c.displayName(), d+1, describeChoices(f.ts), describeChoices(ts)))
			return decideAbandon
		}
		return f.cur
	}
	if d > 0 {
		parent := s.path[d-1]
		if t := parent.ts[parent.cur].id; t.w >= 0 && v.movable(int(t.w)) {
			parent.after[parent.cur] = 1
		} else {
			parent.after[parent.cur] = 0
		}
	}
	if d >= s.bounds.MaxSteps || (s.cutAt > 0 && d >= s.cutAt) {
		return decideCut
	}
	row := s.depthRow(d)
	row.Nodes++
	var sleep []sleepEntry
	if d > 0 && !s.cfg.verify.noPOR {
		sleep = s.childSleep(s.path[d-1])
	}
	if keyOK && s.cutAt == 0 {
		canon := s.canonical(sleep)
		if s.dominated(key, v.budget, canon, d) {
			s.res.CachePruned++
			s.lvl.CachePruned++
			row.CachePruned++
			return decideAbandon
		}
		if s.remember(key, visit{budget: v.budget, sleep: canon, depth: d}) {
			s.res.States++
			s.lvl.States++
			row.States++
		}
	}
	s.res.BoundPruned += int64(boundPruned)
	s.lvl.BoundPruned += int64(boundPruned)
	f := &frame{ts: ts, tried: make([]bool, len(ts)), after: make([]int8, len(ts)), sleep: sleep, curW: v.cur, curMov: v.movable(v.cur), cur: -1,
		key: key, keyOK: keyOK}
	for i := range f.after {
		f.after[i] = -1
	}
	for i := range ts {
		if asleep(sleep, ts[i].id) {
			s.res.SleepPruned++
			s.lvl.SleepPruned++
			row.SleepPruned++
			continue
		}
		if f.cur < 0 {
			f.cur = i
		}
	}
	if f.cur < 0 {
		return decideAbandon
	}
	row.Transitions++
	s.path = append(s.path, f)
	return f.cur
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

// childSleep is the sleep set of the child of f through its current
// choice t: the choices asleep at f and those tried before t at f, each
// kept when it commutes with t and when trying it first could not need
// more preemptions than the order it stands for.
func (s *searcher) childSleep(f *frame) []sleepEntry {
	t := f.ts[f.cur]
	var out []sleepEntry
	keep := func(z sleepEntry) {
		if !s.conflicts(z.fp, t.fp) && s.costSafe(f, z, t) {
			out = append(out, z)
		}
	}
	for _, z := range f.sleep {
		keep(z)
	}
	for j, tried := range f.tried {
		if tried && j != f.cur {
			keep(sleepEntry{id: f.ts[j].id, fp: f.ts[j].fp, after: f.after[j]})
		}
	}
	return out
}

// reductionMutants are the ways a test breaks the reductions on purpose:
// the soundness tests must catch each.
var reductionMutants = []string{"commute-all", "no-cost-check", "key-ignores-db", "key-ignores-history", "key-ignores-broker"}

func (s *searcher) conflicts(a, b footprint) bool {
	switch s.cfg.verify.mutant {
	case "commute-all":
		return (a.ws|a.rs)&(b.ws|b.rs)&(resOwn0*0xff) != 0
	}
	return conflicts(a, b)
}

func (s *searcher) costSafe(f *frame, z sleepEntry, t trans) bool {
	return s.cfg.verify.mutant == "no-cost-check" || costSafe(f, z, t)
}

// costSafe reports whether choice z may sleep below t at f under the
// preemption bound. Asleep there, the schedules t z ... are left to the
// schedules z t ... tried before; that is sound only when z t ... costs
// no more preemptions than t z ... for every continuation, or the bound
// could cut the schedule that stands for one within it. Switching away
// from the worker the schedule is on costs one when it can still move;
// moves of two different workers leave the schedule on different workers,
// so the worst continuation (back to the other) is counted.
func costSafe(f *frame, z sleepEntry, t trans) bool {
	zw, tw := z.id.workerMove(), t.id.workerMove()
	c := f.curW
	mc := 0
	if f.curMov {
		mc = 1
	}
	switch {
	case !zw && !tw:
		return true
	case zw && !tw:
		// A crash of the worker the schedule is on makes switching free:
		// z after it may cost less than z before it.
		return !(t.id.kind == kCrash && int(t.id.w) == c && mc == 1 && int(z.id.w) != c)
	case !zw && tw:
		return true
	}
	d, e := int(t.id.w), int(z.id.w)
	after := int(z.after)
	if after < 0 {
		after = 1
	}
	lhs := mc*b2i(c != e) + after
	rhs := mc * b2i(c != d)
	return lhs <= rhs
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// canonical renames the workers of a sleep set into the state's canonical
// order (the order its name lists them in), so that the sleep sets of two
// states alike but for their workers' names compare.
func (s *searcher) canonical(sleep []sleepEntry) []tid {
	out := make([]tid, 0, len(sleep))
	for _, z := range sleep {
		id := z.id
		if id.w >= 0 {
			id.w = int8(slices.Index(s.perm, int(id.w)))
		}
		out = append(out, id)
	}
	slices.SortFunc(out, compareTid)
	return out
}

func compareTid(a, b tid) int {
	if a.kind != b.kind {
		return int(a.kind) - int(b.kind)
	}
	if a.w != b.w {
		return int(a.w) - int(b.w)
	}
	switch {
	case a.arg < b.arg:
		return -1
	case a.arg > b.arg:
		return 1
	}
	return 0
}

// subset reports whether every id of a is in b (both sorted).
func subset(a, b []tid) bool {
	j := 0
	for _, x := range a {
		for j < len(b) && compareTid(b[j], x) < 0 {
			j++
		}
		if j == len(b) || b[j] != x {
			return false
		}
	}
	return true
}

// dominated reports whether the state was explored before with at least
// this budget and no more choices asleep (and, in the search for fewer
// steps, no deeper).
func (s *searcher) dominated(key sum128, b budgets, sleep []tid, depth int) bool {
	for _, vis := range s.cache[key] {
		if vis.budget.covers(b) && subset(vis.sleep, sleep) {
			return true
		}
	}
	return false
}

// remember records a visit; it reports whether the state is new.
func (s *searcher) remember(key sum128, vis visit) bool {
	old, seen := s.cache[key]
	kept := old[:0]
	for _, o := range old {
		if !(vis.budget.covers(o.budget) && subset(vis.sleep, o.sleep) && vis.depth <= o.depth) {
			kept = append(kept, o)
		}
	}
	s.cache[key] = append(kept, vis)
	return !seen
}

// discover reads the tables the schema made, on a database of its own:
// the statements' footprints name them, and a state's name reads them.
func (s *searcher) discover() error {
	ctx := context.Background()
	db, err := s.cfg.backend.Fresh(ctx)
	if err != nil {
		return fmt.Errorf("%w: open a fresh %s database: %w", ErrBadInput, s.cfg.backend.Name(), err)
	}
	defer db.Close()
	if err := prepareSchema(ctx, db, s.c.Schema); err != nil {
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
	return s.discoverPostgres(ctx, admin)
}

func (s *searcher) discoverSQLite(ctx context.Context, admin *sql.DB) error {
	rows, err := readRows(ctx, admin, `SELECT type, name, coalesce(sql, '') FROM sqlite_master WHERE type IN ('table', 'trigger') ORDER BY name`)
	if err != nil {
		return fmt.Errorf("consumertest: read the schema's tables: %w", err)
	}
	for _, row := range rows {
		typ, name, text := row[0], row[1], strings.ToLower(row[2])
		if typ == "trigger" {
			s.complexSchema = true
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

func (s *searcher) discoverPostgres(ctx context.Context, admin *sql.DB) error {
	rows, err := readRows(ctx, admin, `SELECT c.relkind::text, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'S') ORDER BY c.relname`)
	if err != nil {
		return fmt.Errorf("consumertest: read the schema's tables: %w", err)
	}
	for _, row := range rows {
		kind, name := row[0], row[1]
		quoted := `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
		if kind == "S" {
			s.dumpQueries = append(s.dumpQueries, "SELECT last_value, is_called FROM "+quoted)
			continue
		}
		s.tables[strings.ToLower(name)] = true
		cols, err := columnCount(ctx, admin, "SELECT * FROM "+quoted+" LIMIT 0")
		if err != nil {
			return err
		}
		s.dumpQueries = append(s.dumpQueries, "SELECT * FROM "+quoted+" ORDER BY "+ordinals(cols))
	}
	return nil
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
func (s *searcher) footprintOf(c sqlhook.Call) sqlShape {
	e := &s.fpEnc
	e.reset()
	e.str(c.SQL)
	for _, a := range c.Args {
		e.str(a.Name)
		e.int(int64(a.Ordinal))
		e.value(a.Value)
	}
	if sh, ok := s.shapes[string(e.b)]; ok {
		return sh
	}
	sh := statementFootprint(c.SQL, c.Args, s.tables)
	if s.shapes == nil {
		s.shapes = map[string]sqlShape{}
	}
	s.shapes[string(e.b)] = sh
	return sh
}

// dump names the database's committed content: every row of every table.
func (s *searcher) dump(r *run) (sum128, error) {
	e := &s.dbEnc
	e.reset()
	admin := r.db.Admin()
	for _, q := range s.dumpQueries {
		if err := encodeRows(admin, q, e); err != nil {
			return sum128{}, err
		}
	}
	return sumOf(e.b), nil
}

func encodeRows(db *sql.DB, q string, e *enc) error {
	rows, err := db.Query(q)
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
// of the same law; then every shorter prefix with no more preemptions is
// tried, each completed by the drain, shortest first (the first that
// breaks a law wins); then reduced unless NoReduce, and saved.
func (s *searcher) counterexample(res *VerifyResult, name string) error {
	best := s.best
	law := best.breaches[0].Law
	sc, r := s.shortestPrefix(best.scenario, law)
	if r == nil {
		return fmt.Errorf("%w: consumer %q is not deterministic: the schedule that broke %s does not break it when played again", ErrBadInput, s.c.displayName(), law)
	}
	res.Shortest = true
	k := best.preemptions
	for cut := 1; cut < sc.Size(); cut++ {
		if why := s.budgetSpent(); why != "" {
			res.Shortest = false
			break
		}
		s.best = nil
		s.budget[bPreempt] = int16(k)
		if err := s.level(k, cut); err != nil {
			return err
		}
		if s.stopped != "" {
			res.Shortest, s.stopped = false, ""
			break
		}
		if s.best != nil {
			law = s.best.breaches[0].Law
			if p, pr := s.shortestPrefix(s.best.scenario, law); pr != nil {
				sc, r = p, pr
			}
			break
		}
	}
	res.Steps = sc.Size()
	keep := stillFails(s.c, s.cfg, law)
	if !s.cfg.noReduce {
		if red, rr := Reduce(sc, keep); rr != nil {
			sc, r = red, rr
		}
	}
	res.Law, res.Breaches, res.Scenario, res.Outcome = law, r.Breaches, sc, r.Outcome
	if s.cfg.corpusDir != "" {
		path, err := SaveScenario(s.cfg.corpusDir, s.c.displayName(), law, res.Summary(), sc, r.Outcome, 0)
		if err != nil {
			return fmt.Errorf("consumertest: save the counterexample: %w", err)
		}
		res.CorpusFile, res.Replay = path, replayCommand(path, name)
	}
	return nil
}

// shortestPrefix is the shortest prefix of sc that, completed by the
// drain, breaks law, and its judged result (nil when none does).
func (s *searcher) shortestPrefix(sc *Scenario, law string) (*Scenario, *Result) {
	keep := stillFails(s.c, s.cfg, law)
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
