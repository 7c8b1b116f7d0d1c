// Package kafkabroker is the live broker over Kafka's protocol, through
// franz-go, against franz-go's in-process kfake cluster
// (impl/contract/broker.LiveFactory).
//
// kfake is a fake: an in-process implementation of the Kafka protocol
// written for tests, not Kafka. What this adapter measures is the
// protocol's semantics as kfake implements them — consumer groups,
// committed offsets, no per-message acknowledgement — and not a Kafka
// deployment's behaviour or timing.
//
// Each run gets a one-partition topic and a DLQ topic of its own, and a
// consumer group per group. Offsets are committed after the effect (an
// ack commits the delivered record's offset + 1), so a consumer that
// crashes before the commit gets the record again when it rejoins the
// group. Kafka has no per-message nack: a nack rewinds the session to the
// record, which delivers it (and what follows) again at once. Kafka keeps
// no attempt count and has no delivery limit or dead-letter queue: every
// delivery reports attempt 1, and only a consumer's own dead-letter
// publish reaches dlq.<topic>.
package kafkabroker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/internal/law"
)

// KFake is the only configuration: offsets committed after the effect, on
// an in-process kfake cluster.
const KFake = "kfake"

// Configs lists the configurations.
func Configs() []string { return []string{KFake} }

// Headers the adapter stamps on records.
const (
	hTenant    = "idem-tenant"
	hKey       = "idem-key"
	hTopic     = "idem-topic"
	hGroup     = "idem-group"
	hOffset    = "idem-offset"
	hAttempts  = "idem-attempts"
	hLastError = "idem-last-error"
)

// requestTimeout bounds every request.
const requestTimeout = 5 * time.Second

// Factory opens runs on one in-process cluster.
type Factory struct {
	cluster *kfake.Cluster
	client  *kgo.Client
	runs    atomic.Int64
}

var _ broker.LiveFactory = (*Factory)(nil)

// New starts a kfake cluster ("" is KFake).
func New(config string) (*Factory, error) {
	if config != "" && config != KFake {
		return nil, fmt.Errorf("kafka: unknown configuration %q: want %s", config, KFake)
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		return nil, fmt.Errorf("kafka: kfake cluster: %w", err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ProducerLinger(0))
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("kafka: client: %w", err)
	}
	return &Factory{cluster: c, client: cl}, nil
}

// Name implements broker.LiveFactory.
func (f *Factory) Name() string { return "kafka:" + KFake }

// Caps implements broker.LiveFactory: no per-message ack timeout (a
// group's poll interval is minutes), no restart, no delivery limit.
func (f *Factory) Caps() broker.LiveCaps { return broker.LiveCaps{} }

// Close implements broker.LiveFactory.
func (f *Factory) Close() error {
	f.client.Close()
	f.cluster.Close()
	return nil
}

func down(what string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, kgo.ErrClientClosed) {
		return fmt.Errorf("%w: kafka %s: %w", broker.ErrBrokerDown, what, err)
	}
	return fmt.Errorf("kafka %s: %w", what, err)
}

// Open implements broker.LiveFactory: the run's topic and DLQ topic.
func (f *Factory) Open(ctx context.Context, spec broker.LiveSpec) (broker.Live, error) {
	n := f.runs.Add(1)
	r := &run{f: f, spec: spec, topic: fmt.Sprintf("%s.r%d", spec.Topic, n), prefix: fmt.Sprintf("r%d.", n)}
	r.dlq = broker.DLQTopic(r.topic)
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req := kmsg.NewPtrCreateTopicsRequest()
	for _, name := range []string{r.topic, r.dlq} {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = name, 1, 1
		req.Topics = append(req.Topics, t)
	}
	resp, err := req.RequestWith(ctx, f.client)
	if err != nil {
		return nil, down("create topics", err)
	}
	for _, t := range resp.Topics {
		if t.ErrorCode != 0 {
			return nil, fmt.Errorf("kafka: create topic %s: error code %d", t.Topic, t.ErrorCode)
		}
	}
	return r, nil
}

type run struct {
	f          *Factory
	spec       broker.LiveSpec
	topic, dlq string
	prefix     string // of the run's consumer group names
	mu         sync.Mutex
	reader     *kgo.Client
	read       []broker.DLQEntry
	dlqNext    int64 // the DLQ offset after the last record read
}

func (r *run) produce(ctx context.Context, rec *kgo.Record) (*kgo.Record, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	res := r.f.client.ProduceSync(ctx, rec)
	got, err := res.First()
	if err != nil {
		return nil, down("produce", err)
	}
	return got, nil
}

// Produce implements broker.Live. The idempotent producer drops only its
// own retries of a batch; a producer's retry of the event is a new record.
func (r *run) Produce(ctx context.Context, tenant, key string, payload []byte) (broker.ProduceResult, error) {
	rec, err := r.produce(ctx, &kgo.Record{Topic: r.topic, Key: []byte(key), Value: payload,
		Headers: []kgo.RecordHeader{{Key: hTenant, Value: []byte(tenant)}, {Key: hKey, Value: []byte(key)}}})
	if err != nil {
		return broker.ProduceResult{}, err
	}
	return broker.ProduceResult{Offset: rec.Offset}, nil
}

func header(rec *kgo.Record, key string) string {
	for _, h := range rec.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// DLQ implements broker.Live: it reads dlq.<topic> up to its end (the
// partition's high watermark, asked first, so that a slow fetch is waited
// for and not taken for an empty topic) and returns every entry read so
// far.
func (r *run) DLQ(ctx context.Context) ([]broker.DLQEntry, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	end, err := r.dlqEnd(ctx)
	if err != nil {
		return nil, err
	}
	if r.reader == nil && end > r.dlqNext {
		cl, err := kgo.NewClient(kgo.SeedBrokers(r.f.cluster.ListenAddrs()...), kgo.ConsumeTopics(r.dlq),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(10*time.Millisecond))
		if err != nil {
			return nil, down("DLQ reader", err)
		}
		r.reader = cl
	}
	for r.dlqNext < end {
		fs := r.reader.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			return nil, down("read DLQ", err)
		}
		fs.EachRecord(func(rec *kgo.Record) {
			r.dlqNext = max(r.dlqNext, rec.Offset+1)
			off, _ := strconv.ParseInt(header(rec, hOffset), 10, 64)
			att, _ := strconv.Atoi(header(rec, hAttempts))
			r.read = append(r.read, broker.DLQEntry{Topic: header(rec, hTopic), Offset: off, Group: header(rec, hGroup),
				Attempts: att, LastError: header(rec, hLastError), Tenant: header(rec, hTenant), Key: header(rec, hKey), Poison: true})
		})
	}
	return append([]broker.DLQEntry(nil), r.read...), nil
}

// dlqEnd asks for the DLQ partition's high watermark: the offset the next
// record will get.
func (r *run) dlqEnd(ctx context.Context) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = r.dlq
	p := kmsg.NewListOffsetsRequestTopicPartition()
	p.Partition, p.Timestamp = 0, -1 // -1: the latest offset
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, r.f.client)
	if err != nil {
		return 0, down("DLQ end offset", err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return 0, errors.New("kafka: DLQ end offset: the answer names no single partition")
	}
	rp := resp.Topics[0].Partitions[0]
	if rp.ErrorCode != 0 {
		return 0, fmt.Errorf("kafka: DLQ end offset: error code %d", rp.ErrorCode)
	}
	return rp.Offset, nil
}

// Close implements broker.Live: the run's topics go.
func (r *run) Close() error {
	r.mu.Lock()
	if r.reader != nil {
		r.reader.Close()
	}
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TopicNames = []string{r.topic, r.dlq}
	for _, name := range req.TopicNames {
		t := kmsg.NewDeleteTopicsRequestTopic()
		t.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, t)
	}
	_, err := req.RequestWith(ctx, r.f.client)
	return down("delete topics", err)
}

// Session implements broker.Live: a group member of its own.
func (r *run) Session(_ context.Context, group string) (broker.Session, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(r.f.cluster.ListenAddrs()...), kgo.ConsumerGroup(r.prefix+group),
		kgo.ConsumeTopics(r.topic), kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(10*time.Millisecond))
	if err != nil {
		return nil, down("consumer "+group, err)
	}
	return &session{r: r, group: group, cl: cl}, nil
}

type session struct {
	r     *run
	group string
	cl    *kgo.Client
}

// Next implements broker.Session: one record from the group's partition.
func (s *session) Next(ctx context.Context, wait time.Duration) (broker.LiveDelivery, bool, error) {
	pctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	fs := s.cl.PollRecords(pctx, 1)
	if err := fs.Err0(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		if errors.Is(err, context.Canceled) {
			return broker.LiveDelivery{}, false, err
		}
		return broker.LiveDelivery{}, false, down("poll", err)
	}
	recs := fs.Records()
	if len(recs) == 0 {
		return broker.LiveDelivery{}, false, nil
	}
	rec := recs[0]
	m := broker.Message{Topic: s.r.spec.Topic, Offset: rec.Offset, Group: s.group, Tenant: header(rec, hTenant),
		Key: header(rec, hKey), Payload: rec.Value, Origin: broker.Produced, Attempts: 1}
	return broker.LiveDelivery{Message: m, Ref: rec}, true, nil
}

func (s *session) record(d broker.LiveDelivery) (*kgo.Record, error) {
	rec, ok := d.Ref.(*kgo.Record)
	if !ok {
		return nil, fmt.Errorf("kafka: delivery of offset %d is not from this adapter", d.Message.Offset)
	}
	return rec, nil
}

// Ack implements broker.Session: commit the record's offset + 1, after
// the effect.
func (s *session) Ack(ctx context.Context, d broker.LiveDelivery) error {
	rec, err := s.record(d)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	return down("commit", s.cl.CommitRecords(ctx, rec))
}

// Nack implements broker.Session: rewind to the record. Kafka keeps no
// reason and applies no delay.
func (s *session) Nack(_ context.Context, d broker.LiveDelivery, _ time.Duration, _ string) error {
	rec, err := s.record(d)
	if err != nil {
		return err
	}
	s.cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{rec.Topic: {rec.Partition: {Epoch: -1, Offset: rec.Offset}}})
	return nil
}

// DeadLetter implements broker.Session: produce to dlq.<topic> with the
// metadata as headers.
func (s *session) DeadLetter(ctx context.Context, d broker.LiveDelivery, reason string) error {
	m := d.Message
	_, err := s.r.produce(ctx, &kgo.Record{Topic: s.r.dlq, Key: []byte(m.Key), Value: m.Payload, Headers: []kgo.RecordHeader{
		{Key: hTopic, Value: []byte(s.r.spec.Topic)}, {Key: hGroup, Value: []byte(s.group)},
		{Key: hOffset, Value: []byte(strconv.FormatInt(m.Offset, 10))}, {Key: hAttempts, Value: []byte(strconv.Itoa(m.Attempts))},
		{Key: hLastError, Value: []byte(reason)}, {Key: hTenant, Value: []byte(m.Tenant)}, {Key: hKey, Value: []byte(m.Key)}}})
	return err
}

// Close implements broker.Session: the member leaves the group without
// committing what it holds.
func (s *session) Close() error {
	s.cl.Close()
	return nil
}

// Fix says in one line how to make the invariant hold on Kafka ("" if
// there is nothing to say).
func Fix(_, invariant string) string {
	switch invariant {
	case law.BoundedAttempts:
		return "Kafka counts no attempts and has no delivery limit: count them yourself (a retry topic per attempt, or an attempts header on republish) and dead-letter at max_attempts."
	case law.ProducerGate:
		return "Kafka's idempotent producer drops only its own retries within a session: an application's retry needs its own gate (an outbox, or a keyed produce record committed before the retry)."
	}
	return ""
}
