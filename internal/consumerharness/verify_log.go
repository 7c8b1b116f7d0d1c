package consumerharness

import (
	"fmt"
	"maps"
	"slices"

	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// The model checker on a log broker (Consumer.Log): the choices a log run
// offers at a decision point, their footprints on the broker's state, and
// the log's part of a state's name. See docs/model-checking-consumers.md,
// "On a log broker".
//
// The broker's state of partition p (its owner, epoch and committed
// offset) is the resource partBit(p); a worker's client memory (its
// positions, the call in hand) is own(i). A fetch reads who owns the
// partition and writes the fetcher's memory; a commit reads the owner and
// epoch, writes the committed offset and reads the database (to judge
// commit-after-apply there); the settle of an assignment reads the
// committed offsets of what it was given; a rebalance writes the
// partition and both workers' memories. A crash, a reset of the group's
// offsets and an automatic commit (made inside a fetch) touch everything.

// partBit is the resource of partition p's broker state. The queue's
// message bits are free on a log run: the queue broker holds nothing.
func partBit(p int) uint64 { return msgBit(int64(p)) }

// logIdle lists the calls idle worker i may be given: its assignment
// (arg -1) when one is pending, else a batch of each partition it may
// fetch from (arg the partition).
func (v *verifyRun) logIdle(i int, cost int16, add func(trans)) {
	r := v.r
	w := r.workers[i]
	if !r.logCanMove(w) {
		return
	}
	auto := r.c.Log.AutoCommit > 0 && r.now()-w.lg.lastAuto >= r.c.Log.AutoCommit.Milliseconds()
	fp := func(rs uint64) footprint {
		if auto {
			// The automatic commit made first lands commits and reads
			// the database.
			return footprint{all: true}
		}
		return footprint{ws: own(i), rs: rs | resClock}
	}
	if len(w.lg.pending) > 0 && w.lg.retryAt[-1] <= r.now() {
		add(trans{id: tid{kRecv, int8(i), -1}, step: Step{Op: OpRun, Worker: i + 1}, fp: fp(0), spend: -1, cost: cost, dirty: auto})
		return
	}
	for k, p := range r.fetchable(w) {
		add(trans{id: tid{kRecv, int8(i), int64(p)}, step: Step{Op: OpRun, Worker: i + 1, Pick: k}, fp: fp(partBit(p)), spend: -1, cost: cost, dirty: auto})
	}
}

// logParked is the footprint of parked worker i's move at a commit or at
// the settle of its call; ok is false for any other point.
func (v *verifyRun) logParked(i int, w *worker) (footprint, bool) {
	p := w.at
	switch {
	case p.commit != nil:
		fp := footprint{ws: own(i), rs: resClock | resDB}
		if c := p.commit.partition; c >= 0 && c < len(v.r.lg.owner) {
			fp.ws |= partBit(c)
		}
		return fp, true
	case p.settle:
		fp := footprint{ws: own(i), rs: resClock}
		if j := w.lg.job; j != nil {
			if j.assign {
				for _, q := range j.parts {
					fp.rs |= partBit(q)
				}
			} else {
				fp.rs |= partBit(j.partition)
			}
		}
		return fp, true
	}
	return footprint{}, false
}

// logRebalances lists the rebalances: each partition to each worker that
// does not own it.
func (v *verifyRun) logRebalances(out []trans) []trans {
	for p, o := range v.r.lg.owner {
		for i := range v.r.workers {
			if i == o {
				continue
			}
			out = append(out, trans{id: tid{kRebalance, int8(i), int64(p)}, step: Step{Op: OpRebalance, Worker: i + 1, Pick: p},
				fp: footprint{ws: partBit(p) | own(i) | own(o)}, spend: bRebalance})
		}
	}
	return out
}

// logJobOf is the identity of the call worker w has in hand (0: none):
// a Handle or an Assigned starts with no memory of the one before.
func logJobOf(w *worker) int64 {
	if w.lg == nil || w.lg.job == nil {
		return 0
	}
	return w.lg.job.id
}

// encodeLogJob writes the call worker w has in hand into its history.
func encodeLogJob(e *enc, j *logJob) {
	e.byte('L')
	e.byte(b2byte(j.assign))
	for _, p := range j.parts {
		e.int(int64(p))
	}
	e.byte('/')
	e.int(int64(j.partition))
	e.int(int64(j.epoch))
	for _, rec := range j.records {
		e.int(rec.Offset)
		e.int(int64(rec.Attempts))
		e.str(rec.LastError)
	}
}

// encodeLogState writes the broker's side of a log run: each partition's
// owner, epoch and committed offset, and whether a commit ran ahead of
// the effects (which one is the verdict's detail, not the state's).
func encodeLogState(e *enc, lg *logState) {
	e.byte('G')
	for p := range lg.owner {
		e.int(int64(lg.owner[p]))
		e.int(int64(lg.epoch[p]))
		e.int(lg.committed[p])
	}
	e.byte(b2byte(lg.gap != nil))
}

// encodeLogWorker writes what a worker's client holds: its positions, the
// offsets its fetches returned, the epochs it was given its partitions
// at, the assignments pending, its retries' deadlines (from now) and
// attempts, and how long ago it committed automatically.
func encodeLogWorker(e *enc, r *run, w *worker) {
	lw := w.lg
	now := r.now()
	e.byte('W')
	for _, p := range slices.Sorted(maps.Keys(lw.pos)) {
		e.int(int64(p))
		e.int(lw.pos[p])
	}
	e.byte('/')
	for _, p := range slices.Sorted(maps.Keys(lw.returned)) {
		e.int(int64(p))
		e.int(lw.returned[p])
	}
	e.byte('/')
	for _, p := range slices.Sorted(maps.Keys(lw.epoch)) {
		e.int(int64(p))
		e.int(int64(lw.epoch[p]))
	}
	e.byte('/')
	for _, p := range lw.pending {
		e.int(int64(p))
	}
	e.byte('/')
	for _, p := range slices.Sorted(maps.Keys(lw.retryAt)) {
		if t := lw.retryAt[p]; t > now {
			e.int(int64(p))
			e.int(t - now)
		}
	}
	e.byte('/')
	for _, p := range slices.Sorted(maps.Keys(lw.attempts)) {
		e.int(int64(p))
		e.int(int64(lw.attempts[p]))
		e.str(lw.lastErr[p])
	}
	if a := r.c.Log.AutoCommit.Milliseconds(); a > 0 {
		e.int(min(now-lw.lastAuto, a))
	}
	if j := lw.job; j != nil {
		encodeLogJob(e, j)
	}
	if w.state == parked && w.at.commit != nil {
		e.int(int64(w.at.commit.epoch))
	}
}

// validateLogBounds reports what a log consumer's bounds cannot have: a
// duplicate (a log has none), an event that is not ok (log scenarios have
// no poison, and a transient fate is a queue delivery's), a partition
// count out of range.
func validateLogBounds(b Bounds) error {
	var errs []string
	for i, w := range append([]Bounds{b}, b.Then...) {
		at := ""
		if i > 0 {
			at = fmt.Sprintf("then %d: ", i)
		}
		if w.Duplicates > 0 {
			errs = append(errs, at+"duplicates on a log broker (a log has none: start from DefaultLogBounds)")
		}
		for k, f := range w.Events {
			if f != FateOK {
				errs = append(errs, fmt.Sprintf("%sevent %d: fate %s on a log broker (give ok: a log's records have no poison, and Fail injects failures)", at, k+1, f))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: bounds: %s", ErrBadInput, joinSorted(errs))
	}
	return nil
}

func joinSorted(errs []string) string {
	slices.Sort(errs)
	out := errs[0]
	for _, e := range errs[1:] {
		out += "; " + e
	}
	return out
}

// logWorld makes world b one of a log broker: one partition unless it
// says otherwise, and, where time may move, the consumer's automatic
// commit interval among the amounts it moves by (so that an automatic
// commit can land while a batch it runs ahead of is unapplied).
func logWorld(b Bounds, lc *handler.LogConsumer) Bounds {
	if b.Partitions == 0 {
		b.Partitions = 1
	}
	if d := lc.AutoCommit; d > 0 && b.Advances > 0 && !slices.Contains(b.Durations, d) {
		b.Durations = append(slices.Clone(b.Durations), d)
	}
	return b
}

// DefaultLogBounds are the bounds of a log consumer's verification unless
// told otherwise (DefaultBounds.Log), in two worlds searched in turn:
//
//   - two records of one partition, two workers of the group (the second
//     owns nothing until a rebalance gives it the partition), at most one
//     preemption, one crash (anywhere, a commit among the points), one
//     injected failure (a commit's among them) and one rebalance (at any
//     point, so that a worker holding a batch becomes a zombie whose
//     commits are fenced);
//   - one record, one worker, at most one crash, one injected failure,
//     one reset of the group's offsets to the start and one move of time
//     at any point (to the next retry or by the consumer's automatic
//     commit interval: an automatic commit landing past a failed batch).
var DefaultLogBounds = Bounds{Events: []Fate{FateOK, FateOK}, Workers: 2, Partitions: 1, Preemptions: 1, Crashes: 1, Failures: 1, Rebalances: 1,
	Then: []Bounds{{Events: []Fate{FateOK}, Workers: 1, Partitions: 1, Crashes: 1, Failures: 1, Replays: 1, Advances: 1}}}

// userOf is the first user (u1, u2, ...) whose events go to partition p
// of n, so that the bounds' events spread over the partitions in turn.
func userOf(p, n int) string {
	for k := 1; ; k++ {
		if u := fmt.Sprintf("u%d", k); partitionOf(u, n) == p {
			return u
		}
	}
}
