package consumerharness

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
	"strings"

	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/contract/event"
	"github.com/idemcheck/idemcheck/impl/contract/handler"
	"github.com/idemcheck/idemcheck/internal/situation"
)

// The log broker: a topic of partitions, a consumer group whose
// partitions are owned by workers, an offset committed per partition.
// It plays in the same run as the queue broker (run.go): the same workers,
// scheduler, drain and judge; only what an idle worker is given and what
// its answer settles differ. See docs/consumers.md, "On a log broker".

// logState is the broker's side of a log run.
type logState struct {
	// parts holds, per partition, the index in Scenario.Events of the
	// event at each offset.
	parts [][]int
	// committed is the group's committed offset per partition.
	committed []int64
	// owner is the worker (index in run.workers) that owns each
	// partition.
	owner []int
	// epoch counts the assignments of each partition: a commit by a
	// worker assigned it at an older epoch is fenced.
	epoch []int
	// base are the effects once the schema ran (see commitGap).
	base Snapshot
	// gap is the first breach of commit-after-apply.
	gap *Breach
	// known is, per partition, how many of its first records a commit's
	// read of the effects found applied (see commitLog).
	known []int64
	// jobs counts the calls handed to workers: each call's id.
	jobs int64
}

// logWorker is a worker incarnation's side of a log run: what its client
// holds in memory (lost in a crash).
type logWorker struct {
	// pos is the next offset to fetch, per partition it owns and was
	// assigned (Assigned returned).
	pos map[int]int64
	// returned is the offset after the records fetches returned, per
	// partition: what an automatic commit commits.
	returned map[int]int64
	// epoch is the epoch each partition was given to it at.
	epoch map[int]int
	// pending are the partitions given to it whose Assigned has not
	// returned yet.
	pending []int
	// retryAt is when a partition whose batch failed is fetched again
	// (scenario ms since the start); attempts and lastErr count and say
	// the fetches of the batch at its position.
	retryAt  map[int]int64
	attempts map[int]int
	lastErr  map[int]string
	// lastAuto is when it last committed automatically.
	lastAuto int64
	// job is the call in hand.
	job *logJob
}

func newLogWorker(now int64) *logWorker {
	return &logWorker{pos: map[int]int64{}, returned: map[int]int64{}, epoch: map[int]int{}, retryAt: map[int]int64{},
		attempts: map[int]int{}, lastErr: map[int]string{}, lastAuto: now}
}

// logJob is one call of the consumer's: Assigned, or Handle on a batch.
type logJob struct {
	// id tells one call from the next (Verify's histories start afresh
	// with each).
	id        int64
	assign    bool
	parts     []int
	positions map[int]int64
	partition int
	epoch     int
	records   []handler.Record
	offsets   handler.Offsets
}

// logJobKey is the context key of the job a worker's goroutine runs.
type logJobKey struct{}

// logFactory is the Worker of a log consumer: its handler runs the job
// its context carries.
func logFactory(lc *handler.LogConsumer) handler.Worker {
	return func(string, *sql.DB) (handler.Func, io.Closer, error) {
		return func(ctx context.Context, db *sql.DB, _ handler.Message) error {
			j := ctx.Value(logJobKey{}).(*logJob)
			if j.assign {
				pos, err := lc.Assigned(ctx, db, slices.Clone(j.parts))
				j.positions = pos
				return err
			}
			return lc.Handle(ctx, db, j.records, j.offsets)
		}, nil, nil
	}
}

// commitReq is a commit a worker is parked at.
type commitReq struct {
	partition int
	next      int64
	epoch     int
	err       error
}

// logOffsets is the Offsets of one batch.
type logOffsets struct {
	w     *worker
	epoch map[int]int
}

// Commit parks the worker at the commit, a scheduling and crash point;
// the commit lands when the scheduler moves it on (see logCommit).
func (o logOffsets) Commit(ctx context.Context, partition int, next int64) error {
	w := o.w
	if w.crashing.Load() {
		return errCrashing
	}
	req := &commitReq{partition: partition, next: next, epoch: o.epoch[partition]}
	switch w.park(wevent{kind: evParked, p: point{what: fmt.Sprintf("commit p%d at %d", partition, next), commit: req}}) {
	case crash:
		runtime.Goexit()
	case fail:
		return ErrInjected
	case expired:
		return ctx.Err()
	}
	return req.err
}

// logInit lays the events out in their partitions and gives each worker
// its partitions, to be assigned at its first move.
func (r *run) logInit() {
	n := r.s.Partitions
	r.lg = &logState{parts: make([][]int, n), committed: make([]int64, n), owner: make([]int, n), epoch: make([]int, n), known: make([]int64, n)}
	for _, w := range r.workers {
		w.lg = newLogWorker(r.now())
	}
	for p := range n {
		r.lg.owner[p] = r.s.owner(p) - 1
		r.giveLog(p)
	}
}

// giveLog gives partition p to its owner anew: a new epoch, which fences
// the commits of whoever held it before, and an assignment pending.
func (r *run) giveLog(p int) {
	r.lg.epoch[p]++
	lw := r.workers[r.lg.owner[p]].lg
	lw.epoch[p] = r.lg.epoch[p]
	delete(lw.pos, p)
	delete(lw.returned, p)
	if !slices.Contains(lw.pending, p) {
		lw.pending = append(lw.pending, p)
		slices.Sort(lw.pending)
	}
}

// logRestarted gives a restarted worker its partitions again: what its
// client held is gone.
func (r *run) logRestarted(w *worker) {
	w.lg = newLogWorker(r.now())
	for p, o := range r.lg.owner {
		if o == w.n-1 {
			r.giveLog(p)
		}
	}
}

// produceLog appends every event to its partition, in order.
func (r *run) produceLog() {
	for i, e := range r.s.Events {
		p := partitionOf(e.User, r.s.Partitions)
		off := len(r.lg.parts[p])
		r.lg.parts[p] = append(r.lg.parts[p], i)
		r.tracef(Entry{Kind: KindProduce, Event: e.ID}, "produce %s: user %s, %d cents%s (p%d, offset %d)", e.ID, e.User, e.Amount, poisonNote(e), p, off)
	}
}

// logRecord is the record at offset off of partition p.
func (r *run) logRecord(p int, off int64, attempts int, lastErr string) handler.Record {
	e := r.s.Events[r.lg.parts[p][off]]
	ev := event.OrderPaid{EventID: e.ID, OccurredAtMs: startMs, OrderID: e.order(), UserID: e.User, AmountCents: e.Amount}
	return handler.Record{Message: handler.Message{EventID: e.ID, Event: ev, Topic: Topic, Group: Group, IdempotencyKey: e.ID,
		Attempts: attempts, LastError: lastErr}, Partition: p, Offset: off}
}

// fetchable lists the partitions w may fetch from now, in order.
func (r *run) fetchable(w *worker) []int {
	lw := w.lg
	var out []int
	for p, o := range r.lg.owner {
		if o != w.n-1 || slices.Contains(lw.pending, p) {
			continue
		}
		pos, ok := lw.pos[p]
		if ok && pos < int64(len(r.lg.parts[p])) && lw.retryAt[p] <= r.now() {
			out = append(out, p)
		}
	}
	return out
}

// logCanMove reports whether idle w has a call to make now.
func (r *run) logCanMove(w *worker) bool {
	return (len(w.lg.pending) > 0 && w.lg.retryAt[-1] <= r.now()) || len(r.fetchable(w)) > 0
}

// logFetch gives idle w its next call, if any, and runs it to its first
// point: Assigned for the partitions given to it, else a batch of the
// pick-th partition it may fetch from. An automatic commit comes first,
// when its interval has passed.
func (r *run) logFetch(w *worker, pick int) bool {
	lw := w.lg
	if lc := r.c.Log; lc.AutoCommit > 0 && r.now()-lw.lastAuto >= lc.AutoCommit.Milliseconds() {
		lw.lastAuto = r.now()
		for _, p := range slices.Sorted(maps.Keys(lw.returned)) {
			if r.lg.owner[p] == w.n-1 && lw.epoch[p] == r.lg.epoch[p] && lw.returned[p] != r.lg.committed[p] {
				r.reach(situation.LogAutoCommit)
				r.commitLog(w, p, lw.returned[p], "auto-commits")
			}
		}
	}
	if len(lw.pending) > 0 && lw.retryAt[-1] <= r.now() {
		j := &logJob{assign: true, parts: slices.Clone(lw.pending)}
		r.tracef(Entry{Kind: KindDeliver, Worker: w.name}, "t=%dms %s is assigned %s: Assigned is called", r.now(), w.name, partNames(j.parts))
		r.runLogJob(w, j, "assignment of "+partNames(j.parts))
		return true
	}
	ps := r.fetchable(w)
	if len(ps) == 0 {
		return false
	}
	p := ps[pick%len(ps)]
	pos := lw.pos[p]
	end := min(pos+int64(max(r.c.Log.MaxBatch, 1)), int64(len(r.lg.parts[p])))
	lw.attempts[p]++
	j := &logJob{partition: p, epoch: lw.epoch[p], offsets: logOffsets{w: w, epoch: maps.Clone(lw.epoch)}}
	var ids []string
	for off := pos; off < end; off++ {
		rec := r.logRecord(p, off, lw.attempts[p], lw.lastErr[p])
		j.records = append(j.records, rec)
		ids = append(ids, rec.EventID)
	}
	lw.returned[p] = max(lw.returned[p], end)
	kind := KindDeliver
	if lw.attempts[p] > 1 {
		kind = KindRedeliver
	}
	r.tracef(Entry{Kind: kind, Worker: w.name, Event: ids[0], Attempt: lw.attempts[p]}, "t=%dms %s fetches p%d offsets %s: %s (fetch %d%s)", r.now(), w.name, p, offsetRange(pos, end), strings.Join(ids, ", "), lw.attempts[p], lastErrNote(lw.lastErr[p]))
	r.runLogJob(w, j, ids[0])
	return true
}

// runLogJob hands j to w's goroutine and runs it to its first point.
func (r *run) runLogJob(w *worker, j *logJob, label string) {
	r.lg.jobs++
	j.id = r.lg.jobs
	w.lg.job = j
	w.rec, w.nrec = -1, 0
	w.ev = event.OrderPaid{EventID: label}
	m := handler.Message{EventID: label}
	if len(j.records) > 0 {
		w.ev, m = j.records[0].Event, j.records[0].Message
		// A delivery per record of the batch: healthy-applied excuses a
		// record the consumer parked in its own dead letters only when
		// the harness's faults hit enough of its fetches, as it does a
		// queue's message.
		w.rec, w.nrec = len(r.deliveries), len(j.records)
		for _, rec := range j.records {
			r.deliveries = append(r.deliveries, Delivery{Worker: w.name, Event: rec.EventID, Offset: rec.Offset, Origin: string(broker.Produced),
				Attempt: rec.Attempts, AtMs: r.now()})
		}
	}
	base, cancel := context.WithCancel(handler.WithDatabase(context.Background(), r.dbName))
	base = context.WithValue(base, logJobKey{}, j)
	w.cancel = cancel
	ctx := handler.WithPoint(base, func(what string) {
		if w.crashing.Load() {
			return
		}
		if what == "" {
			what = "(unnamed)"
		}
		if w.park(wevent{kind: evParked, p: point{what: "call " + what}}) == crash {
			runtime.Goexit()
		}
	})
	r.active.Store(w)
	w.jobs <- job{ctx: ctx, m: m}
	r.await(w)
}

// logSettleWhat names the return of w's job, for the point it parks at.
func (w *worker) logSettleWhat(err error) string {
	j := w.lg.job
	what := "Handle returns"
	if j != nil && j.assign {
		what = "Assigned returns"
	}
	if err != nil {
		return what + " " + quoteShort(err.Error())
	}
	return what + " nil"
}

// settleLog applies what w's job returned.
func (r *run) settleLog(w *worker, p point) {
	r.endDelivery(w)
	lw := w.lg
	j := lw.job
	lw.job = nil
	if j == nil {
		return
	}
	if j.assign {
		r.settleAssigned(w, j, p.result)
		return
	}
	for i := range w.nrec {
		r.deliveries[w.rec+i].Settled = true
	}
	q := j.partition
	last := j.records[len(j.records)-1].Offset
	switch {
	case r.lg.owner[q] != w.n-1 || lw.epoch[q] != j.epoch || r.lg.epoch[q] != j.epoch:
		r.tracef(w.entry(KindAck), "%s is done with p%d up to offset %d, but no longer owns it: its position moves no more", w.name, q, last)
		if p.result != nil && !handler.IsPoison(p.result) {
			r.reach(situation.LogZombieRolledBack)
		}
	case p.result == nil || handler.IsPoison(p.result):
		lw.pos[q] = last + 1
		lw.attempts[q], lw.lastErr[q] = 0, ""
		note := ""
		if p.result != nil {
			note = " (it gave up on them: " + quoteShort(p.result.Error()) + ")"
		}
		r.tracef(w.entry(KindAck), "%s moves past p%d offset %d%s", w.name, q, last, note)
	default:
		lw.lastErr[q] = p.result.Error()
		lw.retryAt[q] = r.now() + r.s.Policy.BackoffMs
		r.tracef(w.entry(KindNack), "%s failed on p%d offsets %s: %s; it fetches them again after %dms", w.name, q, offsetRange(j.records[0].Offset, last+1), quoteShort(p.result.Error()), r.s.Policy.BackoffMs)
	}
}

// settleAssigned sets w's positions from what Assigned returned.
func (r *run) settleAssigned(w *worker, j *logJob, err error) {
	lw := w.lg
	if err != nil {
		lw.retryAt[-1] = r.now() + r.s.Policy.BackoffMs
		r.tracef(w.entry(KindNack), "%s: Assigned failed: %s; it is called again after %dms", w.name, quoteShort(err.Error()), r.s.Policy.BackoffMs)
		return
	}
	var starts []string
	for _, p := range j.parts {
		if r.lg.owner[p] != w.n-1 || !slices.Contains(lw.pending, p) {
			continue // taken away (or given anew) while Assigned ran
		}
		lw.pending = slices.DeleteFunc(lw.pending, func(x int) bool { return x == p })
		start, own := j.positions[p]
		if !own || start == handler.Committed {
			start, own = r.lg.committed[p], false
		}
		if start < 0 || start > int64(len(r.lg.parts[p])) {
			r.fail("log-position", fmt.Sprintf("%s: Assigned returned offset %d for p%d, which holds offsets 0 to %d", w.name, start, p, len(r.lg.parts[p])))
			return
		}
		lw.pos[p], lw.returned[p] = start, start
		lw.attempts[p], lw.lastErr[p] = 0, ""
		from := "committed"
		if own {
			from = "its own"
		}
		starts = append(starts, fmt.Sprintf("p%d at %d (%s)", p, start, from))
	}
	r.tracef(w.entry(KindAck), "%s starts %s", w.name, strings.Join(starts, ", "))
}

// actCommit lands (or fences) the commit w is parked at.
func (r *run) actCommit(w *worker, p point) {
	c := p.commit
	if c.partition < 0 || c.partition >= len(r.lg.owner) {
		c.err = fmt.Errorf("commit: the topic has no partition %d", c.partition)
		r.tracef(w.entry(KindNack), "%s's commit fails: %v", w.name, c.err)
		return
	}
	if r.lg.owner[c.partition] != w.n-1 || c.epoch != r.lg.epoch[c.partition] {
		c.err = handler.ErrFenced
		r.reach(situation.LogCommitFenced)
		r.tracef(w.entry(KindNack), "%s's commit of p%d at %d is fenced: a rebalance gave p%d to %s", w.name, c.partition, c.next, c.partition, r.workers[r.lg.owner[c.partition]].name)
		return
	}
	r.commitLog(w, c.partition, c.next, "commits")
}

// commitLog lands a commit of next for partition p by w, and judges
// commit-after-apply there: every record of p below next must have its
// effect committed in the database (read through the harness's own
// connection) or sit in the consumer's own dead letters.
//
// The effects are read only when the commit moves past records not yet
// seen applied: what a committed read saw applied stays so (only a
// rollback undoes an effect, and a committed read never sees one rolled
// back), so a commit within the records seen applied needs no read. A
// consumer that deletes its own committed effects is the exception; its
// commit over a deleted one goes unremarked here (never a false alarm),
// and nothing-lost judges the effects once quiet. Under Verify every
// commit reads (a state's name does not hold what was seen).
func (r *run) commitLog(w *worker, p int, next int64, verb string) {
	line := r.tracef(w.entry(KindAck), "%s %s p%d at %d", w.name, verb, p, next)
	r.lg.committed[p] = next
	upto := min(next, int64(len(r.lg.parts[p])))
	if r.lg.gap != nil || r.c.Effects.Aggregate || next <= 0 || (r.v == nil && upto <= r.lg.known[p]) {
		return
	}
	c := r.c
	c.Dedupe = "" // not judged here
	snap, err := snapshot(context.Background(), r.db, c)
	if err != nil {
		return // judged from the effects once quiet; nothing to say here
	}
	j := judge{c: r.c, o: &Outcome{Base: r.lg.base}, s: r.s}
	applied := j.counts(snap)
	for _, id := range snap.DeadLetters {
		applied[id]++
	}
	r.learnApplied(applied)
	var missing []string
	for off := int64(0); off < upto; off++ {
		id := r.s.Events[r.lg.parts[p][off]].ID
		if applied[id] <= 0 {
			missing = append(missing, fmt.Sprintf("%s (offset %d)", id, off))
		}
	}
	if len(missing) == 0 {
		return
	}
	r.tracef(w.entry(KindAck), "   ^ commit-after-apply: the commit runs ahead of the effects: %s of p%d not applied", strings.Join(missing, ", "), p)
	b := breach(LawCommitAfterApply, "a committed offset ran ahead of the applied effects",
		fmt.Sprintf("trace line %d: %s %s p%d at %d while %s had no committed effect", line, w.name, verb, p, next, strings.Join(missing, ", ")))
	r.lg.gap = &b
}

// learnApplied moves each partition's known prefix past the records
// applied counts.
func (r *run) learnApplied(applied map[string]int) {
	for q, evs := range r.lg.parts {
		k := r.lg.known[q]
		for k < int64(len(evs)) && applied[r.s.Events[evs[k]].ID] > 0 {
			k++
		}
		r.lg.known[q] = k
	}
}

// rebalanceLog moves partition st.Pick to worker st.Worker.
func (r *run) rebalanceLog(st Step) {
	p, to := st.Pick, st.Worker-1
	from := r.lg.owner[p]
	if from == to {
		r.tracef(Entry{Kind: KindReplay}, "the group rebalances: %s owns p%d already", r.workers[to].name, p)
		return
	}
	old := r.workers[from].lg
	delete(old.pos, p)
	delete(old.returned, p)
	delete(old.epoch, p)
	old.pending = slices.DeleteFunc(old.pending, func(x int) bool { return x == p })
	r.lg.owner[p] = to
	r.giveLog(p)
	r.reach(situation.LogRebalance)
	held := ""
	if j := old.job; j != nil && !j.assign && j.partition == p {
		held = fmt.Sprintf(" while %s holds its batch (it runs on, a zombie whose commits are fenced)", r.workers[from].name)
	}
	r.tracef(Entry{Kind: KindReplay}, "the group rebalances: p%d moves from %s to %s%s", p, r.workers[from].name, r.workers[to].name, held)
}

// replayLog resets the group's committed offsets to the start and
// assigns every partition again.
func (r *run) replayLog() {
	for p := range r.lg.committed {
		r.lg.committed[p] = 0
		r.giveLog(p)
	}
	r.tracef(Entry{Kind: KindReplay}, "the group's committed offsets are reset to the start of every partition; every partition is assigned again")
	r.reach(situation.LogReset)
}

// quietLog reports whether the log is settled (every partition assigned
// and read to its end, no call in hand), and if not, when a failed call
// may be made again (0: none waits).
func (r *run) quietLog() (bool, int64) {
	next := int64(0)
	quiet := true
	for _, w := range r.workers {
		if w.state != idle || w.lg.job != nil || len(w.lg.pending) > 0 {
			quiet = false
		}
		for _, t := range w.lg.retryAt {
			if t > r.now() && (next == 0 || t < next) {
				next = t
			}
		}
	}
	for p, o := range r.lg.owner {
		pos, ok := r.workers[o].lg.pos[p]
		if !ok || pos < int64(len(r.lg.parts[p])) {
			quiet = false
		}
	}
	return quiet, next
}

func partNames(ps []int) string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = fmt.Sprintf("p%d", p)
	}
	return strings.Join(out, ", ")
}

func offsetRange(from, to int64) string {
	if to-from == 1 {
		return fmt.Sprint(from)
	}
	return fmt.Sprintf("%d..%d", from, to-1)
}

// order judges partition-order once quiet: for each partition, the first
// row of each of its events, in the order the effects query returned
// them, follows the events' offsets.
func (j judge) order() []Breach {
	if !j.c.Log.Ordered || j.s.Partitions == 0 {
		return nil
	}
	first := map[string]int{}
	for i, id := range j.o.Quiet.order {
		if _, ok := first[id]; !ok {
			first[id] = i
		}
	}
	for _, id := range j.o.Base.order {
		delete(first, id)
	}
	var details []string
	parts := make([][]Event, j.s.Partitions)
	for _, e := range j.s.Events {
		p := partitionOf(e.User, j.s.Partitions)
		parts[p] = append(parts[p], e)
	}
	for p, evs := range parts {
		var prev *Event
		for off := range evs {
			e := evs[off]
			at, ok := first[e.ID]
			if !ok {
				continue // not applied: nothing-lost says so
			}
			if prev != nil && at < first[prev.ID] {
				details = append(details, fmt.Sprintf("p%d: %s (offset %d) was applied before %s (offset %d), as the effects query returns its rows", p, e.ID, off, prev.ID, slices.IndexFunc(evs, func(x Event) bool { return x.ID == prev.ID })))
			}
			prev = &evs[off]
		}
	}
	if len(details) == 0 {
		return nil
	}
	return []Breach{breach(LawPartitionOrder, "a partition's records were applied out of offset order", details...)}
}

// judgeLog judges a log run: the effects once quiet (single-credit,
// nothing-lost, the consumer's own dead letters as the queue's are
// read), atomicity with a Dedupe query, the first commit that ran ahead
// of the effects, and the order of an Ordered consumer. There is no
// replay after the run (the replay step is the reprocessing) and no retry
// policy (bounded-attempts).
func (j judge) judgeLog() []Breach {
	var out []Breach
	if j.c.Effects.Aggregate {
		out = append(out, j.aggregate("once quiet", j.o.Quiet, nil, true)...)
	} else {
		out = append(out, j.perEvent("once quiet", j.o.Quiet, nil, true)...)
	}
	if j.c.Dedupe != "" {
		out = append(out, j.atomicity("once quiet", j.o.Quiet)...)
	}
	for i := range out {
		out[i].Details = append(out[i].Details, j.where(out[i].Details)...)
	}
	if j.o.CommitGap != nil {
		out = append(out, *j.o.CommitGap)
	}
	out = append(out, j.order()...)
	slices.SortStableFunc(out, func(a, b Breach) int { return rank(a.Law) - rank(b.Law) })
	return out
}

// where names the partition and offset of each event details speak of
// (a detail starts with the event's id).
func (j judge) where(details []string) []string {
	offsets := make([]int, j.s.Partitions)
	var out []string
	for _, e := range j.s.Events {
		p := partitionOf(e.User, j.s.Partitions)
		off := offsets[p]
		offsets[p]++
		if slices.ContainsFunc(details, func(d string) bool { return strings.HasPrefix(d, e.ID+" ") }) {
			out = append(out, fmt.Sprintf("%s is the record at p%d offset %d", e.ID, p, off))
		}
	}
	return out
}
