package livelog

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// member is one worker's client in the consumer group: its own
// connection pool to the database, the partitions the group gave it, and
// the offsets its Assigned asked for, applied when the client fetches
// the group's committed offsets (kgo's AdjustFetchOffsetsFn: the seek of
// a group consumer).
type member struct {
	run  *play
	name string
	db   *sql.DB
	cl   *kgo.Client
	// ctx is the handler's context: canceled by a crash, not by a
	// leave, so that a batch in flight at a rebalance runs on (a zombie).
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	stop   chan struct{}

	mu    sync.Mutex
	owned map[int32]bool
	seek  map[int32]int64
	// queues are, per partition, the records polled and not yet handled
	// (see pending).
	queues map[int32]*pending
}

// pending are a partition's records the member polled and has not
// handled yet, in offset order. A batch Handle failed stays at their
// head and is handed again once retry passed: the client fetches it
// again from its memory, and what it polled stays polled, so kgo's
// automatic commit (at the next poll) covers the failed batch too, as
// the in-memory log broker's client does (see consumerharness's
// logFetch). attempts counts the fetches of the batch at the head.
type pending struct {
	recs     []*kgo.Record
	retry    time.Time
	attempts int
}

// fencing are the answers Kafka gives a commit by a member whose
// generation moved on: the partition may be someone else's now.
var fencing = []error{kerr.IllegalGeneration, kerr.UnknownMemberID, kerr.RebalanceInProgress, kerr.FencedInstanceID, kerr.StaleMemberEpoch}

func (p *play) newMember(name string, db *sql.DB) (*member, error) {
	m := &member{run: p, name: name, db: db, owned: map[int32]bool{}, seek: map[int32]int64{}, queues: map[int32]*pending{},
		done: make(chan struct{}), stop: make(chan struct{})}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	opts := []kgo.Opt{
		kgo.SeedBrokers(p.addrs...),
		kgo.ConsumerGroup(p.group),
		kgo.ConsumeTopics(topic),
		// Eager balancing: every rebalance revokes every partition of
		// every member and assigns them again, so each member's Assigned
		// is called at every rebalance.
		kgo.Balancers(kgo.RoundRobinBalancer()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(10 * time.Second),
		kgo.RebalanceTimeout(10 * time.Second),
		kgo.HeartbeatInterval(50 * time.Millisecond),
		kgo.FetchMaxWait(50 * time.Millisecond),
		kgo.RetryTimeout(5 * time.Second),
		kgo.OnPartitionsAssigned(m.assigned),
		kgo.OnPartitionsRevoked(m.revoked),
		kgo.OnPartitionsLost(m.revoked),
		kgo.AdjustFetchOffsetsFn(m.adjust),
	}
	if ac := p.lc.AutoCommit; ac > 0 {
		opts = append(opts, kgo.AutoCommitInterval(ac), kgo.AutoCommitCallback(m.autoCommitted))
	} else {
		opts = append(opts, kgo.DisableAutoCommit())
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	m.cl = cl
	go m.loop()
	return m, nil
}

// assigned calls the consumer's Assigned for the partitions the group
// gave the member, again after the backoff while it fails.
func (m *member) assigned(ctx context.Context, _ *kgo.Client, as map[string][]int32) {
	parts := slices.Clone(as[topic])
	slices.Sort(parts)
	ps := make([]int, len(parts))
	for i, p := range parts {
		ps[i] = int(p)
	}
	var at map[int]int64
	for {
		var err error
		at, err = m.run.lc.Assigned(m.ctx, m.db, ps)
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-m.ctx.Done():
			return
		case <-time.After(backoff):
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range parts {
		m.owned[p] = true
		if off, ok := at[int(p)]; ok && off != handler.Committed {
			m.seek[p] = off
		}
	}
	m.run.note("%s assigned %v", m.name, ps)
}

// revoked forgets partitions the group took from the member, and the
// records it polled from them: a commit for one is fenced from now on,
// and its next owner fetches them again.
func (m *member) revoked(_ context.Context, _ *kgo.Client, rs map[string][]int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range rs[topic] {
		delete(m.owned, p)
		delete(m.seek, p)
		delete(m.queues, p)
	}
}

// adjust applies the offsets Assigned asked for: the seek.
func (m *member) adjust(_ context.Context, offs map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for p, off := range m.seek {
		if _, ok := offs[topic][p]; ok {
			offs[topic][p] = kgo.NewOffset().At(off).WithEpoch(-1)
		}
	}
	clear(m.seek)
	return offs, nil
}

// holding reports whether the group gave the member a partition.
func (m *member) holding() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.owned) > 0
}

func (m *member) owns(p int32) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.owned[p]
}

// loop polls and hands each partition's records to Handle, at most
// MaxBatch at a time, until the member leaves or crashes. A partition
// whose batch failed waits for its retry while the others go on.
func (m *member) loop() {
	defer close(m.done)
	for {
		select {
		case <-m.stop:
			return
		default:
		}
		wait := 100 * time.Millisecond
		if next, ok := m.nextRetry(); ok {
			wait = max(min(wait, time.Until(next)), time.Millisecond)
		}
		pctx, cancel := context.WithTimeout(m.ctx, wait)
		fs := m.cl.PollRecords(pctx, 64)
		cancel()
		if m.ctx.Err() != nil || m.cl.Context().Err() != nil {
			return
		}
		m.enqueue(fs)
		for _, p := range m.due() {
			m.drain(p)
		}
	}
}

// enqueue appends the polled records to their partitions' queues.
func (m *member) enqueue(fs kgo.Fetches) {
	m.mu.Lock()
	defer m.mu.Unlock()
	fs.EachRecord(func(r *kgo.Record) {
		q := m.queues[r.Partition]
		if q == nil {
			q = &pending{}
			m.queues[r.Partition] = q
		}
		q.recs = append(q.recs, r)
	})
}

// nextRetry is the earliest retry of a failed batch, if one waits.
func (m *member) nextRetry() (time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var next time.Time
	for _, q := range m.queues {
		if len(q.recs) > 0 && !q.retry.IsZero() && (next.IsZero() || q.retry.Before(next)) {
			next = q.retry
		}
	}
	return next, !next.IsZero()
}

// due lists, in order, the partitions with records to hand now.
func (m *member) due() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []int32
	now := time.Now()
	for p, q := range m.queues {
		if len(q.recs) > 0 && !now.Before(q.retry) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// drain hands partition p's queued records to Handle, batch by batch,
// until they are done or a batch fails (it is handed again after its
// retry) or the group took p from the member.
func (m *member) drain(p int32) {
	batch := max(m.run.lc.MaxBatch, 1)
	for {
		m.mu.Lock()
		q := m.queues[p]
		if q == nil || len(q.recs) == 0 || time.Now().Before(q.retry) {
			m.mu.Unlock()
			return
		}
		n := min(batch, len(q.recs))
		rs := slices.Clone(q.recs[:n])
		q.attempts++
		attempts := q.attempts
		m.mu.Unlock()
		ok, retry := m.handle(rs, attempts)
		m.mu.Lock()
		if m.queues[p] != q {
			m.mu.Unlock()
			return // revoked while Handle ran: the next owner fetches them again
		}
		if !ok {
			q.retry = time.Now().Add(retry)
			m.mu.Unlock()
			return
		}
		q.recs, q.attempts, q.retry = q.recs[n:], 0, time.Time{}
		if len(q.recs) == 0 {
			delete(m.queues, p)
		}
		m.mu.Unlock()
	}
}

// handle hands one batch to Handle, fetched attempts times, and records
// the delivery. ok is false when Handle answered a transient error; the
// batch is then handed again after retry: the backoff, or, when the run
// injected the failure, the outage that came with it (see play.outage).
func (m *member) handle(rs []*kgo.Record, attempts int) (ok bool, retry time.Duration) {
	recs := make([]handler.Record, 0, len(rs))
	for _, r := range rs {
		i, ok := m.run.index[string(r.Value)]
		if !ok {
			continue
		}
		recs = append(recs, m.run.record(i, int(r.Partition), r.Offset, attempts))
	}
	if len(recs) == 0 {
		return true, 0
	}
	ctx := m.ctx
	inj := m.run.takeFailure()
	if inj != nil {
		ctx = context.WithValue(ctx, injectionKey{}, inj)
	}
	m.run.handling(1)
	err := m.run.lc.Handle(ctx, m.db, recs, offsets{m})
	m.run.handling(-1)
	fired := inj != nil && inj.fired.Load()
	if inj != nil && !fired {
		m.run.putBackFailure() // Handle made no database call: the next one gets it
	}
	m.run.delivered(m.name, recs, err, fired, m.ctx.Err() != nil)
	ok = err == nil || handler.IsPoison(err)
	retry = backoff
	if fired && !ok {
		retry = m.run.outage()
		m.run.outageUntil(time.Now().Add(retry))
		m.run.note("fault: %s's Handle of p%d offsets %d-%d failed at its first database call (injected: a lost connection); fetched again after %s",
			m.name, recs[0].Partition, recs[0].Offset, recs[len(recs)-1].Offset, retry)
	}
	return ok, retry
}

// offsets commits through the member's client.
type offsets struct{ m *member }

// Commit is a synchronous offset commit; a member that lost the
// partition (the group took it, or Kafka refuses the member's
// generation) gets ErrFenced and nothing is committed by it.
func (o offsets) Commit(ctx context.Context, partition int, next int64) error {
	m := o.m
	if !m.owns(int32(partition)) {
		m.run.fenced(m.name, partition, next)
		return handler.ErrFenced
	}
	var cerr error
	m.cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{topic: {int32(partition): {Epoch: -1, Offset: next}}},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err != nil {
				cerr = err
				return
			}
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					if e := kerr.ErrorForCode(p.ErrorCode); e != nil {
						cerr = e
					}
				}
			}
		})
	for _, f := range fencing {
		if errors.Is(cerr, f) {
			m.run.fenced(m.name, partition, next)
			return handler.ErrFenced
		}
	}
	if cerr != nil {
		return cerr
	}
	m.run.committed(m.name, partition, next, false)
	return nil
}

// autoCommitted judges the commits kgo's automatic commit landed.
func (m *member) autoCommitted(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
	if err != nil || req == nil || resp == nil {
		return
	}
	asked := map[int32]int64{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			asked[p.Partition] = p.Offset
		}
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode == 0 {
				m.run.committed(m.name+" (auto-commit)", int(p.Partition), asked[p.Partition], true)
			}
		}
	}
}

// leave takes the member out of the group: the batch in flight runs on
// (its commits fenced once the group took its partitions).
func (m *member) leave() {
	close(m.stop)
	m.cl.Close()
	<-m.done
}

// crash stops the member where it stands: its handler's context is
// canceled (its open transaction rolls back), its client closes without
// committing, its connections close.
func (m *member) crash() {
	m.cancel()
	close(m.stop)
	m.cl.Close()
	<-m.done
	_ = m.db.Close()
}
