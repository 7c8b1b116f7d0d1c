// Package livelog is the live driver of a team's log consumer
// (handler.LogConsumer): it plays the consumer, unchanged, against
// franz-go's in-process kfake cluster through a franz-go client (kgo),
// records what happened (deliveries, commits and their offsets, the
// effects read from the database at each commit that landed and once
// quiet) and judges the log laws on that record through the consumer
// harness's judge (consumerharness.JudgeLiveLog).
//
// A run is a topic of the scenario's partitions, produced with its
// events (each to the partition the in-memory broker gives it), and one
// kgo client per worker in one consumer group with eager balancing
// (every rebalance revokes and assigns every partition). Assigned runs
// in OnPartitionsAssigned and its offsets are the seek applied when the
// client fetches the group's offsets; Handle gets one partition's polled
// records, at most MaxBatch; Offsets.Commit is a synchronous commit, and
// a commit by a member that lost the partition is ErrFenced; AutoCommit
// is kgo's automatic commit. The scenario's faults are played live:
// crash (a member's client closed without committing, its connections
// closed, a fresh member joins), rebalance (a member leaves and
// rejoins; its batch in flight runs on as a zombie), replay (every
// member leaves, the group's offsets are reset to 0, they rejoin) and
// fail (the first database call of the next Handle call fails with
// consumerharness.ErrInjected, as a lost connection: the one fault
// played inside the team's handler, through a wrapping driver, as the
// in-memory run plays it). Each
// fault fires once the run has handled a share of the records; the
// broker's timing is not reproducible, so a breach is confirmed by
// playing the same scenario again (Check) and called unconfirmed when no
// replay reproduces it.
package livelog

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"modernc.org/sqlite" // the consumer's database

	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/contract/handler"
	"github.com/idemcheck/idemcheck/internal/consumerharness"
	"github.com/idemcheck/idemcheck/internal/consumerharness/sqlhook"
)

// topic is the run's topic on its own cluster.
const topic = "orders"

// backoff is the wait before a member fetches records again after
// Handle failed, and before Assigned is called again after it failed.
const backoff = 20 * time.Millisecond

// Run is what one live run recorded and the laws it broke.
type Run struct {
	// Lines narrate the run: assignments, faults, commits, fenced
	// commits, failed batches.
	Lines []string
	// Deliveries counts the batches handed to Handle, Commits the commits
	// that landed, Fenced those refused as ErrFenced.
	Deliveries, Commits, Fenced int
	// Batches are the batches handed to Handle and what it answered,
	// CommitLog every commit asked for, in the order they ended.
	Batches   []Batch
	CommitLog []Commit
	// Breaches are the laws the record breaks.
	Breaches []consumerharness.Breach
	// Drained says the run ended with every event applied (or in the
	// consumer's dead letters); otherwise it ended when nothing moved for
	// a while.
	Drained bool
}

// Batch is one batch handed to Handle: by which worker, from which
// partition, its first and last offsets, the fetches of it so far, the
// answer ("" for nil), and whether the run injected a failure into it
// (its first database call failed).
type Batch struct {
	Worker      string
	Partition   int
	First, Last int64
	Attempt     int
	Error       string
	Injected    bool
}

// Commit is one commit of Next for Partition by Worker: landed, or
// Fenced (ErrFenced, nothing committed); Auto for kgo's automatic
// commit; Ahead lists the records below Next with no effect when it
// landed (commit-after-apply).
type Commit struct {
	Worker    string
	Partition int
	Next      int64
	Fenced    bool
	Auto      bool
	Ahead     []string
}

type play struct {
	c     consumerharness.Consumer
	lc    *handler.LogConsumer
	s     *consumerharness.Scenario
	addrs []string
	group string
	dsn   string
	admin *sql.DB
	index map[string]int // event id -> event index

	mu       sync.Mutex
	inFlight int
	records  int // records handled
	last     time.Time
	gap      *consumerharness.Breach
	out      Run
	start    time.Time
	// failures are the shares of records handled after which the fail
	// faults not yet injected fire, in order (see takeFailure).
	failures []int
	// outageEnd is when the last batch failed by an injected failure is
	// fetched again: the faults after it wait for it (see Play).
	outageEnd time.Time
	// deliveries are the records handed to Handle, one each, with what
	// Handle answered and what the run did to the call (judged by
	// healthy-applied).
	deliveries []consumerharness.Delivery
}

// Play plays s live once: c.Log against an in-process kfake cluster, on
// a fresh SQLite database of its own.
func Play(ctx context.Context, c consumerharness.Consumer, s *consumerharness.Scenario) (*Run, error) {
	if c.Log == nil || c.Log.Handle == nil || c.Log.Assigned == nil {
		return nil, fmt.Errorf("%w: a live log run needs Consumer.Log with Assigned and Handle", consumerharness.ErrBadInput)
	}
	if c.Effects.Aggregate {
		return nil, fmt.Errorf("%w: a live log run judges effects per event", consumerharness.ErrBadInput)
	}
	dir, err := os.MkdirTemp("", "idemcheck-livelog-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	p := &play{c: c, lc: c.Log, s: s, group: "g", index: map[string]int{}, start: time.Now(),
		dsn: "file:" + filepath.Join(dir, "consumer.db") + "?_pragma=busy_timeout(5000)"}
	for i, e := range s.Events {
		p.index[e.ID] = i
	}
	if p.admin, err = sql.Open("sqlite", p.dsn); err != nil {
		return nil, err
	}
	defer p.admin.Close()
	if _, err := p.admin.ExecContext(ctx, c.Schema); err != nil {
		return nil, fmt.Errorf("%w: the schema: %w", consumerharness.ErrBadInput, err)
	}
	base, err := consumerharness.ReadSnapshot(ctx, p.admin, c)
	if err != nil {
		return nil, err
	}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(int32(s.Partitions), topic))
	if err != nil {
		return nil, fmt.Errorf("kfake: %w", err)
	}
	defer cluster.Close()
	p.addrs = cluster.ListenAddrs()
	members := make([]*member, s.Workers)
	defer func() {
		for _, m := range members {
			if m != nil {
				m.crash()
			}
		}
	}()
	for w := range members {
		if members[w], err = p.join(w, nil); err != nil {
			return nil, err
		}
	}
	// The events are produced once the group settled: a member that
	// joins while another already handles records makes the group
	// rebalance under them, a fault the scenario did not draw.
	p.settle(ctx, members)
	if err := p.produce(ctx); err != nil {
		return nil, err
	}
	faults := faultsOf(s)
	share := func(k int) int { return max(1, (k+1)*len(s.Events)/(len(faults)+1)) }
	p.mu.Lock()
	for k, st := range faults {
		if st.Op == consumerharness.OpFail {
			p.failures = append(p.failures, share(k))
		}
	}
	p.mu.Unlock()
	for k, st := range faults {
		// Fault k fires once a share of the records was handled, or when
		// the run is quiet before that. A failure is injected by the
		// Handle call that starts once its share was handled (see
		// takeFailure): a wait here would come after the records it
		// should hit on a fast machine. A fault after an injected failure
		// waits for the outage that came with it, so that a rebalance or
		// a crash does not take the failed batch away before the outage
		// shows what it does (an automatic commit past it).
		if st.Op == consumerharness.OpFail {
			continue
		}
		p.wait(ctx, members, func() bool { return p.handled() >= share(k) && !p.inOutage() })
		w := min(max(st.Worker, 1), s.Workers) - 1
		switch st.Op {
		case consumerharness.OpCrash:
			p.note("fault: %s crashes", members[w].name)
			members[w].crash()
			members[w] = nil
			if members[w], err = p.join(w, nil); err != nil {
				return nil, err
			}
		case consumerharness.OpRebalance:
			p.note("fault: %s leaves the group and rejoins", members[w].name)
			db := members[w].db
			members[w].leave()
			members[w] = nil
			if members[w], err = p.join(w, db); err != nil {
				return nil, err
			}
		case consumerharness.OpReplay:
			p.note("fault: every member leaves, the group's offsets are reset to 0, they rejoin")
			dbs := make([]*sql.DB, len(members))
			for i, m := range members {
				dbs[i] = m.db
				m.leave()
				members[i] = nil
			}
			if err := p.reset(ctx); err != nil {
				return nil, err
			}
			for i := range members {
				if members[i], err = p.join(i, dbs[i]); err != nil {
					return nil, err
				}
			}
		}
	}
	p.out.Drained = p.wait(ctx, members, func() bool { return false })
	quiet, err := consumerharness.ReadSnapshot(ctx, p.admin, c)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.out.Breaches = consumerharness.JudgeLiveLog(c, s, base, quiet, p.gap, p.deliveries)
	out := p.out
	return &out, ctx.Err()
}

// faultsOf lists the steps of s a live run plays: the faults. Run and
// advance are the broker's and the machine's timing live.
func faultsOf(s *consumerharness.Scenario) []consumerharness.Step {
	var out []consumerharness.Step
	for _, st := range s.Steps {
		switch st.Op {
		case consumerharness.OpCrash, consumerharness.OpRebalance, consumerharness.OpReplay, consumerharness.OpFail:
			out = append(out, st)
		}
	}
	return out
}

// produce writes every event to its partition, in the scenario's order.
func (p *play) produce(ctx context.Context) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.addrs...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		return err
	}
	defer cl.Close()
	var rs []*kgo.Record
	for _, e := range p.s.Events {
		rs = append(rs, &kgo.Record{Key: []byte(e.User), Value: []byte(e.ID),
			Partition: int32(consumerharness.PartitionOf(e.User, p.s.Partitions))})
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return cl.ProduceSync(pctx, rs...).FirstErr()
}

// join starts worker w's member, on db or, when nil, on a connection
// pool of its own (a fresh process). The pool's connections go through
// sqlhook, whose hook injects the run's failures (see injector).
func (p *play) join(w int, db *sql.DB) (*member, error) {
	if db == nil {
		db = sql.OpenDB(sqlhook.NewConnector(func() (driver.Conn, error) { return sqliteDriver.Open(p.dsn) }, injector{},
			func(error) bool { return false }))
	}
	return p.newMember(fmt.Sprintf("w%d", w+1), db)
}

// sqliteDriver opens the members' connections, under sqlhook.
var sqliteDriver = &sqlite.Driver{}

// injection is a failure the run injects into one Handle call: the
// call's first begin, exec or query fails. fired says it did.
type injection struct{ fired atomic.Bool }

// injectionKey is the context key of the injection a Handle call
// carries.
type injectionKey struct{}

// injector is the members' sqlhook.Hook: it fails the first begin, exec
// or query made with the context of a Handle call that carries an
// injection (the call's, or its transaction's) with
// consumerharness.ErrInjected, as a lost connection answers, and lets
// every other call reach the database untouched. The driver answers
// busy only after the DSN's busy timeout; the hook does not wait longer.
type injector struct{}

// Before fails the call when its Handle carries an injection not yet
// fired.
func (injector) Before(c sqlhook.Call) error {
	switch c.Op {
	case sqlhook.Begin, sqlhook.Exec, sqlhook.Query:
	default:
		return nil // a commit or a rollback: its failure would leave the transaction's fate unknown
	}
	for _, ctx := range []context.Context{c.Ctx, c.TxCtx} {
		if ctx == nil {
			continue
		}
		if inj, ok := ctx.Value(injectionKey{}).(*injection); ok && inj.fired.CompareAndSwap(false, true) {
			return consumerharness.ErrInjected
		}
	}
	return nil
}

// Busy returns the driver's busy answer to the caller, as without the
// hook.
func (injector) Busy(_ sqlhook.Call, err error) error { return err }

// takeFailure returns the injection for a Handle call about to start,
// when a fail fault's share of records was handled; nil otherwise.
func (p *play) takeFailure() *injection {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.failures) == 0 || p.records < p.failures[0] {
		return nil
	}
	p.failures = p.failures[1:]
	return &injection{}
}

// putBackFailure gives back a failure a Handle call did not fire (it
// made no database call): the next call gets it.
func (p *play) putBackFailure() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failures = append([]int{p.records}, p.failures...)
}

// outageUntil records that a batch an injected failure failed is
// fetched again at end.
func (p *play) outageUntil(end time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if end.After(p.outageEnd) {
		p.outageEnd = end
	}
}

// inOutage reports whether a batch an injected failure failed still
// waits to be fetched again.
func (p *play) inOutage() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return time.Now().Before(p.outageEnd)
}

// outage is how long a batch whose failure the run injected waits
// before it is fetched again: the backoff, or, for a consumer with
// AutoCommit, its interval and 200 ms more, so that kgo's automatic
// commit lands while the batch is unapplied, as the in-memory run's
// move of time by that interval does (a lost connection that long is
// no rarity).
func (p *play) outage() time.Duration {
	if ac := p.lc.AutoCommit; ac > 0 {
		return max(backoff, ac+200*time.Millisecond)
	}
	return backoff
}

// reset commits offset 0 for every partition while the group is empty.
func (p *play) reset(ctx context.Context) error {
	// Versions of Kafka 3.0 name the topic (later ones name it by id).
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.addrs...), kgo.MaxVersions(kversion.V3_0_0()))
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = p.group, -1
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = topic
	for part := range p.s.Partitions {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = int32(part), 0
		t.Partitions = append(t.Partitions, rp)
	}
	req.Topics = append(req.Topics, t)
	for try := 0; ; try++ {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		resp, err := req.RequestWith(rctx, cl)
		cancel()
		if err == nil {
			err = firstCommitError(resp)
		}
		if err == nil || try >= 50 {
			return err
		}
		time.Sleep(backoff) // the members' leaving is still settling
	}
}

func firstCommitError(resp *kmsg.OffsetCommitResponse) error {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kmsgErr(p.ErrorCode); err != nil {
				return err
			}
		}
	}
	return nil
}

// quietFor is how long nothing must move once every event is applied;
// stalledFor how long when some is not (a consumer that lost it, or a
// group still settling on a loaded machine); limit bounds a run.
const (
	quietFor   = 300 * time.Millisecond
	stalledFor = 3 * time.Second
	limit      = 30 * time.Second
	// settleFor bounds the wait for the group to settle before the
	// events are produced.
	settleFor = 10 * time.Second
)

// wait waits until done, or until the run is quiet: no batch in flight,
// every partition owned, nothing handled for quietFor with every event
// applied, or for stalledFor. It reports whether every event was
// applied.
func (p *play) wait(ctx context.Context, members []*member, done func() bool) bool {
	deadline := time.Now().Add(limit)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		if done() {
			return false
		}
		time.Sleep(50 * time.Millisecond)
		p.mu.Lock()
		idle, since := p.inFlight == 0, time.Since(p.last)
		p.mu.Unlock()
		if !idle || since < quietFor || !owned(members, p.s.Partitions) {
			continue
		}
		if p.allApplied(ctx) {
			return true
		}
		if since >= stalledFor {
			return false
		}
	}
	return false
}

// settle waits, at most settleFor, until the group gave every partition
// to a member and every member that can have one a partition.
func (p *play) settle(ctx context.Context, members []*member) {
	deadline := time.Now().Add(settleFor)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		holding := 0
		for _, m := range members {
			if m.holding() {
				holding++
			}
		}
		if holding == min(len(members), p.s.Partitions) && owned(members, p.s.Partitions) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// owned reports whether the group gave every partition to a member.
func owned(members []*member, partitions int) bool {
	for part := range partitions {
		if !func() bool {
			for _, m := range members {
				if m != nil && m.owns(int32(part)) {
					return true
				}
			}
			return false
		}() {
			return false
		}
	}
	return true
}

func (p *play) allApplied(ctx context.Context) bool {
	snap, err := consumerharness.ReadSnapshot(ctx, p.admin, p.c)
	if err != nil {
		return false
	}
	seen := map[string]bool{}
	for _, r := range snap.Rows {
		seen[r[0]] = true
	}
	for _, id := range snap.DeadLetters {
		seen[id] = true
	}
	for _, e := range p.s.Events {
		if !seen[e.ID] {
			return false
		}
	}
	return true
}

func (p *play) handled() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.records
}

func (p *play) handling(d int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inFlight += d
	p.last = time.Now()
}

func (p *play) record(i, part int, off int64, attempts int) handler.Record {
	return consumerharness.LiveRecord(p.s, i, part, off, attempts)
}

// delivered records a batch handed to Handle by worker w, its answer,
// and the faults the run caused in the call: an injected failure, or a
// crash of the member while Handle ran.
func (p *play) delivered(w string, recs []handler.Record, err error, injected, crashed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.out.Deliveries++
	p.records += len(recs)
	p.last = time.Now()
	var faults []consumerharness.Fault
	if injected {
		faults = append(faults, consumerharness.Fault{Kind: consumerharness.FaultInjected, At: "its first database call"})
	}
	if crashed {
		faults = append(faults, consumerharness.Fault{Kind: consumerharness.FaultCrash})
	}
	answer, reason := consumerharness.AnswerAck, ""
	switch {
	case handler.IsPoison(err):
		answer, reason = consumerharness.AnswerPoison, err.Error()
	case err != nil:
		answer, reason = consumerharness.AnswerNack, err.Error()
	}
	for _, r := range recs {
		p.deliveries = append(p.deliveries, consumerharness.Delivery{Worker: w, Event: r.EventID, Offset: r.Offset, Origin: string(broker.Produced),
			Attempt: r.Attempts, AtMs: time.Since(p.start).Milliseconds(), Answer: answer, Error: reason, Settled: !crashed, Faults: faults})
	}
	b := Batch{Worker: w, Partition: recs[0].Partition, First: recs[0].Offset, Last: recs[len(recs)-1].Offset, Attempt: recs[0].Attempts, Injected: injected}
	if err != nil {
		b.Error = err.Error()
	}
	p.out.Batches = append(p.out.Batches, b)
	if err != nil && !handler.IsPoison(err) {
		p.lineLocked("%s p%d offsets %d-%d: %v", w, b.Partition, b.First, b.Last, err)
	}
}

func (p *play) fenced(w string, part int, next int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.out.Fenced++
	p.out.CommitLog = append(p.out.CommitLog, Commit{Worker: w, Partition: part, Next: next, Fenced: true})
	p.lineLocked("%s commits p%d at %d: fenced", w, part, next)
}

// committed records a commit that landed and judges commit-after-apply
// there, from the effects read through the driver's own connection once
// Kafka acknowledged it. Effects only read later than the commit can
// miss a breach, never make one up.
func (p *play) committed(w string, part int, next int64, auto bool) {
	snap, err := consumerharness.ReadSnapshot(context.Background(), p.admin, p.c)
	missing := []string(nil)
	if err == nil && next > 0 {
		missing = consumerharness.CommitAhead(p.c, p.s, snap, part, next)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.out.Commits++
	p.out.CommitLog = append(p.out.CommitLog, Commit{Worker: w, Partition: part, Next: next, Auto: auto, Ahead: missing})
	p.lineLocked("%s commits p%d at %d", w, part, next)
	if err != nil {
		// Not judged at this commit: say so rather than pass it.
		p.lineLocked("   (commit-after-apply not judged here: reading the effects failed: %v)", err)
	}
	if len(missing) > 0 && p.gap == nil {
		b := consumerharness.CommitAheadBreach(w, part, next, missing)
		p.gap = &b
		p.lineLocked("   ^ commit-after-apply: %s not applied", strings.Join(missing, ", "))
	}
}

func (p *play) note(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lineLocked(format, args...)
}

func (p *play) lineLocked(format string, args ...any) {
	p.out.Lines = append(p.out.Lines, fmt.Sprintf("%6dms ", time.Since(p.start).Milliseconds())+fmt.Sprintf(format, args...))
}

// errCommit wraps an error code of an offset commit.
var errCommit = errors.New("offset commit refused")

func kmsgErr(code int16) error {
	if code == 0 {
		return nil
	}
	return fmt.Errorf("%w: error code %d", errCommit, code)
}
