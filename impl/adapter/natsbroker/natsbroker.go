// Package natsbroker is the live broker over NATS JetStream, embedded in
// the process (impl/contract/broker.LiveFactory): nothing to install.
//
// Each run gets a stream of its own (file storage when the run restarts the
// server, so the restart keeps it; memory storage otherwise)
// and a durable pull consumer per consumer group, with AckWait, MaxDeliver
// and BackOff from the run's policy. Attempts are the message metadata's
// NumDelivered; a nack is a Nak with the backoff as its delay. The producer
// gate is Nats-Msg-Id (the event id) with the stream's duplicate window.
//
// JetStream has no dead-letter queue. The advisory-dlq configuration
// builds one the way a team would: a subscriber of the max-deliveries
// advisory republishes the message to dlq.<topic> with its metadata
// (attempts from the advisory, last error from what the consumer's nacks
// recorded, "ack_timeout" when the last delivery was never settled). The
// other configurations show what goes wrong without it, or with a
// duplicate window shorter than the producer's retry window.
package natsbroker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/internal/law"
)

// The configurations.
const (
	// AdvisoryDLQ: the max-deliveries advisory republishes to the DLQ.
	AdvisoryDLQ = "advisory-dlq"
	// NoDLQ: no advisory subscriber; exhausted messages stay in the stream,
	// never delivered again and never dead-lettered.
	NoDLQ = "no-dlq"
	// ShortDedupe: the advisory DLQ, but a duplicate window of
	// ShortDedupeWindow, shorter than a producer's retry gap.
	ShortDedupe = "short-dedupe"
)

// Configs lists the configurations, the default first.
func Configs() []string { return []string{AdvisoryDLQ, NoDLQ, ShortDedupe} }

// DedupeWindow is the duplicate window of the configurations that get it
// right: longer than any producer retry.
const DedupeWindow = 2 * time.Minute

// ShortDedupeWindow is the duplicate window of ShortDedupe: the shortest
// JetStream accepts.
const ShortDedupeWindow = 100 * time.Millisecond

// Headers the adapter stamps on messages and DLQ entries.
const (
	hTenant    = "Idem-Tenant"
	hKey       = "Idem-Key"
	hTopic     = "Idem-Topic"
	hGroup     = "Idem-Group"
	hOffset    = "Idem-Offset"
	hAttempts  = "Idem-Attempts"
	hLastError = "Idem-Last-Error"
	hPoison    = "Idem-Poison"
)

// advisoryPrefix is the subject prefix of the max-deliveries advisories.
const advisoryPrefix = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES."

// requestTimeout bounds every request to the server, so a broker that
// stops is an error and not a hang.
const requestTimeout = 5 * time.Second

// Factory opens runs on one embedded server.
type Factory struct {
	config string
	srv    *Server
	nc     *nats.Conn
	js     jetstream.JetStream
	runs   atomic.Int64
}

var _ broker.LiveFactory = (*Factory)(nil)

// New starts an embedded server for the configuration ("" is AdvisoryDLQ).
func New(config string) (*Factory, error) {
	if config == "" {
		config = AdvisoryDLQ
	}
	known := false
	for _, c := range Configs() {
		known = known || c == config
	}
	if !known {
		return nil, fmt.Errorf("nats: unknown configuration %q: want one of %s", config, strings.Join(Configs(), ", "))
	}
	srv, err := StartServer()
	if err != nil {
		return nil, err
	}
	f := &Factory{config: config, srv: srv}
	f.nc, err = connect(srv.URL(), "idemcheck-admin")
	if err != nil {
		_ = srv.Close()
		return nil, err
	}
	f.js, err = jetstream.New(f.nc)
	if err != nil {
		f.nc.Close()
		_ = srv.Close()
		return nil, fmt.Errorf("nats: jetstream: %w", err)
	}
	return f, nil
}

// connectTimeout bounds a connection's dial and handshake: the server is
// in the process, but on a starved machine its accept loop may take
// seconds to run, which is no broker going down.
const connectTimeout = 10 * time.Second

func connect(url, name string) (*nats.Conn, error) {
	nc, err := nats.Connect(url, nats.Name(name), nats.ReconnectWait(20*time.Millisecond),
		nats.MaxReconnects(250), nats.Timeout(connectTimeout))
	if err != nil {
		return nil, fmt.Errorf("%w: nats %s: %w", broker.ErrBrokerDown, url, err)
	}
	return nc, nil
}

// Name implements broker.LiveFactory.
func (f *Factory) Name() string { return "nats:" + f.config }

// Caps implements broker.LiveFactory.
func (f *Factory) Caps() broker.LiveCaps {
	return broker.LiveCaps{AckTimeout: true, Restart: true, DeliveryLimit: true}
}

// Server is the embedded server (to stop it, as a broker that dies).
func (f *Factory) Server() *Server { return f.srv }

// Close implements broker.LiveFactory.
func (f *Factory) Close() error {
	f.nc.Close()
	return f.srv.Close()
}

// stopped is the error of every call once the embedded server has been
// stopped: the adapter owns the server and need not wait for a timeout.
func (f *Factory) stopped() error {
	if f.srv.Running() {
		return nil
	}
	return fmt.Errorf("%w: nats: the embedded server is stopped", broker.ErrBrokerDown)
}

// down marks the errors that mean the server is gone.
func down(what string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, nats.ErrNoServers) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, nats.ErrDisconnected) {
		return fmt.Errorf("%w: nats %s: %w", broker.ErrBrokerDown, what, err)
	}
	return fmt.Errorf("nats %s: %w", what, err)
}

// Open implements broker.LiveFactory: a stream and a DLQ stream of the
// run's own, a durable consumer per group, and (unless NoDLQ) the advisory
// subscriber.
func (f *Factory) Open(ctx context.Context, spec broker.LiveSpec) (broker.Live, error) {
	p := spec.Policy
	if p.MaxAttempts < 1 || p.AckTimeoutMs < 1 {
		return nil, fmt.Errorf("nats: policy needs maxAttempts >= 1 and ackTimeoutMs >= 1, got %+v", p)
	}
	if err := f.stopped(); err != nil {
		return nil, err
	}
	n := f.runs.Add(1)
	r := &run{f: f, spec: spec, stream: fmt.Sprintf("R%d", n), dlqStream: fmt.Sprintf("R%d_DLQ", n),
		subject: fmt.Sprintf("%s.r%d", spec.Topic, n), lastNack: map[string]nack{}}
	r.dlqSubject = broker.DLQTopic(r.subject)
	window := DedupeWindow
	if f.config == ShortDedupe {
		window = ShortDedupeWindow
	}
	// File storage survives a restart; memory storage is several times
	// faster to create and delete, for the runs that restart nothing.
	storage := jetstream.MemoryStorage
	if spec.Durable {
		storage = jetstream.FileStorage
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	if err := createStream(ctx, f.js, jetstream.StreamConfig{Name: r.stream, Subjects: []string{r.subject},
		Storage: storage, Duplicates: window}); err != nil {
		return nil, down("create stream", err)
	}
	if err := createStream(ctx, f.js, jetstream.StreamConfig{Name: r.dlqStream, Subjects: []string{r.dlqSubject},
		Storage: storage, Duplicates: DedupeWindow}); err != nil {
		_ = r.Close()
		return nil, down("create DLQ stream", err)
	}
	for _, g := range spec.Groups {
		cfg := jetstream.ConsumerConfig{Durable: consumerName(g), AckPolicy: jetstream.AckExplicitPolicy,
			AckWait: ms(p.AckTimeoutMs), MaxDeliver: p.MaxAttempts, FilterSubject: r.subject,
			DeliverPolicy: jetstream.DeliverAllPolicy, MaxAckPending: 1000}
		// BackOff replaces AckWait per delivery: a delivery not acked is
		// redelivered after the ack timeout plus the retry backoff. JetStream
		// wants fewer steps than MaxDeliver.
		for i := 1; i < p.MaxAttempts; i++ {
			cfg.BackOff = append(cfg.BackOff, ms(p.AckTimeoutMs+p.Backoff(i)))
		}
		if _, err := f.js.CreateOrUpdateConsumer(ctx, r.stream, cfg); err != nil {
			_ = r.Close()
			return nil, down("create consumer "+g, err)
		}
	}
	if f.config != NoDLQ {
		sub, err := f.nc.Subscribe(advisoryPrefix+r.stream+".*", r.onMaxDeliveries)
		if err != nil {
			_ = r.Close()
			return nil, down("subscribe advisory", err)
		}
		r.advisory = sub
		if err := f.nc.Flush(); err != nil {
			_ = r.Close()
			return nil, down("flush", err)
		}
	}
	return r, nil
}

func ms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

// errCodeStreamCreate is the server's error code of a stream it could not
// create (JSStreamCreateErrF), which wraps a store that failed.
const errCodeStreamCreate jetstream.ErrorCode = 10049

// createStream creates a stream. A file-storage stream the server failed
// to set up ("error creating store for stream", whose cause the server
// only logs) is tried twice more: it was seen once, under -race on a
// loaded machine, and not reproduced since.
func createStream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) error {
	var err error
	for try := 0; try < 3; try++ {
		if _, err = js.CreateStream(ctx, cfg); err == nil {
			return nil
		}
		var apiErr *jetstream.APIError
		if cfg.Storage != jetstream.FileStorage || !errors.As(err, &apiErr) || apiErr.ErrorCode != errCodeStreamCreate {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
	return err
}

// consumerName is a durable name for a group (durable names allow no dots).
func consumerName(group string) string {
	return "G_" + strings.NewReplacer(".", "_", "*", "_", ">", "_", " ", "_").Replace(group)
}

type nack struct {
	attempts int
	reason   string
}

// run is one run's streams and consumers.
type run struct {
	f                   *Factory
	spec                broker.LiveSpec
	stream, dlqStream   string
	subject, dlqSubject string
	advisory            *nats.Subscription

	mu       sync.Mutex
	lastNack map[string]nack // group/seq -> the last nack the consumer recorded
	advErr   error
}

var (
	_ broker.Live      = (*run)(nil)
	_ broker.Restarter = (*run)(nil)
)

func nackKey(group string, seq uint64) string { return group + "/" + strconv.FormatUint(seq, 10) }

// Produce implements broker.Live: the event id is the Nats-Msg-Id.
func (r *run) Produce(ctx context.Context, tenant, key string, payload []byte) (broker.ProduceResult, error) {
	if err := r.f.stopped(); err != nil {
		return broker.ProduceResult{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	m := nats.NewMsg(r.subject)
	m.Data = payload
	m.Header.Set(hTenant, tenant)
	m.Header.Set(hKey, key)
	opts := []jetstream.PublishOpt{}
	if key != "" {
		opts = append(opts, jetstream.WithMsgID(key))
	}
	ack, err := r.f.js.PublishMsg(ctx, m, opts...)
	if err != nil {
		return broker.ProduceResult{}, down("publish", err)
	}
	return broker.ProduceResult{Offset: int64(ack.Sequence), Duplicate: ack.Duplicate}, nil
}

// Restart implements broker.Restarter: the whole embedded server restarts
// over its storage (every run on the factory sees it).
func (r *run) Restart(ctx context.Context) error {
	before := r.f.nc.Stats().Reconnects
	if err := r.f.srv.Restart(); err != nil {
		return err
	}
	// Wait for the admin connection to have noticed the restart and come
	// back, and for JetStream to serve the stream again: right after the
	// restart the client may still believe its old socket alive, and a
	// request written there is lost and times out, which would read as a
	// broker that is down.
	deadline := time.Now().Add(requestTimeout)
	for {
		if r.f.nc.Stats().Reconnects > before && r.f.nc.IsConnected() {
			tctx, cancel := context.WithTimeout(ctx, 250*time.Millisecond)
			_, err := r.f.js.Stream(tctx, r.stream)
			cancel()
			if err == nil {
				return nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%w: nats: the stream did not come back after a restart", broker.ErrBrokerDown)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// advisory is the max-deliveries advisory's body.
type advisory struct {
	Stream     string `json:"stream"`
	Consumer   string `json:"consumer"`
	StreamSeq  uint64 `json:"stream_seq"`
	Deliveries uint64 `json:"deliveries"`
}

// onMaxDeliveries is the team's DLQ publisher: it reads the exhausted
// message back from the stream and republishes it to dlq.<topic>.
func (r *run) onMaxDeliveries(m *nats.Msg) {
	var a advisory
	if err := json.Unmarshal(m.Data, &a); err != nil {
		r.fail(fmt.Errorf("advisory: %w", err))
		return
	}
	group := ""
	for _, g := range r.spec.Groups {
		if consumerName(g) == a.Consumer {
			group = g
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	s, err := r.f.js.Stream(ctx, r.stream)
	if err != nil {
		r.fail(down("advisory stream", err))
		return
	}
	orig, err := s.GetMsg(ctx, a.StreamSeq)
	if err != nil {
		r.fail(down("advisory get", err))
		return
	}
	r.mu.Lock()
	last, ok := r.lastNack[nackKey(group, a.StreamSeq)]
	r.mu.Unlock()
	reason := "ack_timeout"
	if ok && uint64(last.attempts) >= a.Deliveries {
		reason = last.reason
	}
	out := nats.NewMsg(r.dlqSubject)
	out.Data = orig.Data
	out.Header.Set(hTopic, r.spec.Topic)
	out.Header.Set(hGroup, group)
	out.Header.Set(hOffset, strconv.FormatUint(a.StreamSeq, 10))
	out.Header.Set(hAttempts, strconv.FormatUint(a.Deliveries, 10))
	out.Header.Set(hLastError, reason)
	out.Header.Set(hTenant, orig.Header.Get(hTenant))
	out.Header.Set(hKey, orig.Header.Get(hKey))
	if _, err := r.f.js.PublishMsg(ctx, out, jetstream.WithMsgID("dlq/"+nackKey(group, a.StreamSeq))); err != nil {
		r.fail(down("advisory republish", err))
	}
}

func (r *run) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.advErr == nil {
		r.advErr = err
	}
}

// DLQ implements broker.Live: every message of the DLQ stream, decoded
// from its headers.
func (r *run) DLQ(ctx context.Context) ([]broker.DLQEntry, error) {
	if err := r.f.stopped(); err != nil {
		return nil, err
	}
	r.mu.Lock()
	advErr := r.advErr
	r.mu.Unlock()
	if advErr != nil {
		return nil, advErr
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	s, err := r.f.js.Stream(ctx, r.dlqStream)
	if err != nil {
		return nil, down("DLQ stream", err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return nil, down("DLQ info", err)
	}
	var out []broker.DLQEntry
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			return nil, down("DLQ get", err)
		}
		off, _ := strconv.ParseInt(m.Header.Get(hOffset), 10, 64)
		att, _ := strconv.Atoi(m.Header.Get(hAttempts))
		out = append(out, broker.DLQEntry{Topic: m.Header.Get(hTopic), Offset: off, Group: m.Header.Get(hGroup),
			Attempts: att, LastError: m.Header.Get(hLastError), Tenant: m.Header.Get(hTenant), Key: m.Header.Get(hKey),
			Poison: m.Header.Get(hPoison) == "true"})
	}
	return out, nil
}

// Close implements broker.Live: the run's streams go.
func (r *run) Close() error {
	if r.advisory != nil {
		_ = r.advisory.Unsubscribe()
	}
	if r.f.stopped() != nil {
		return nil // nothing to delete from: the factory's Close removes the storage
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	var errs []error
	for _, s := range []string{r.stream, r.dlqStream} {
		if err := r.f.js.DeleteStream(ctx, s); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			errs = append(errs, down("delete stream "+s, err))
		}
	}
	return errors.Join(errs...)
}

// Session implements broker.Live: a connection of its own, so that Close
// is a consumer crash.
func (r *run) Session(ctx context.Context, group string) (broker.Session, error) {
	nc, err := connect(r.f.srv.URL(), "idemcheck-"+group)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, down("jetstream", err)
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	c, err := js.Consumer(ctx, r.stream, consumerName(group))
	if err != nil {
		nc.Close()
		return nil, down("consumer "+group, err)
	}
	return &session{r: r, group: group, nc: nc, js: js, cons: c}, nil
}

type session struct {
	r     *run
	group string
	nc    *nats.Conn
	js    jetstream.JetStream
	cons  jetstream.Consumer
}

// Next implements broker.Session with a one-message fetch that the server
// expires after wait. The client waits for the server's answer (the
// message, or the request's expiry) rather than giving up on its own
// clock: a client that gave up first, on a starved process, would drop a
// message the server had just delivered, and the server would count that
// delivery and redeliver only after the ack timeout.
func (s *session) Next(ctx context.Context, wait time.Duration) (broker.LiveDelivery, bool, error) {
	if err := s.r.f.stopped(); err != nil {
		return broker.LiveDelivery{}, false, err
	}
	if err := ctx.Err(); err != nil {
		return broker.LiveDelivery{}, false, err
	}
	batch, err := s.cons.Fetch(1, jetstream.FetchMaxWait(max(wait, time.Millisecond)))
	if err != nil {
		return broker.LiveDelivery{}, false, down("fetch", err)
	}
	var got jetstream.Msg
	for m := range batch.Messages() {
		got = m
	}
	if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
		return broker.LiveDelivery{}, false, down("fetch", err)
	}
	if got == nil {
		return broker.LiveDelivery{}, false, nil
	}
	md, err := got.Metadata()
	if err != nil {
		return broker.LiveDelivery{}, false, fmt.Errorf("nats: metadata: %w", err)
	}
	h := got.Headers()
	msg := broker.Message{Topic: s.r.spec.Topic, Offset: int64(md.Sequence.Stream), Group: s.group,
		Tenant: h.Get(hTenant), Key: h.Get(hKey), Payload: got.Data(), Origin: broker.Produced,
		Attempts: int(md.NumDelivered)}
	return broker.LiveDelivery{Message: msg, Ref: got}, true, nil
}

func (s *session) msg(d broker.LiveDelivery) (jetstream.Msg, error) {
	m, ok := d.Ref.(jetstream.Msg)
	if !ok {
		return nil, fmt.Errorf("nats: delivery of offset %d is not from this adapter", d.Message.Offset)
	}
	return m, nil
}

// Ack implements broker.Session; the server confirms it.
func (s *session) Ack(ctx context.Context, d broker.LiveDelivery) error {
	m, err := s.msg(d)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	return down("ack", m.DoubleAck(ctx))
}

// Nack implements broker.Session: the reason is recorded for the DLQ
// publisher (JetStream keeps none), then Nak with the delay.
func (s *session) Nack(_ context.Context, d broker.LiveDelivery, delay time.Duration, reason string) error {
	m, err := s.msg(d)
	if err != nil {
		return err
	}
	s.r.mu.Lock()
	s.r.lastNack[nackKey(s.group, uint64(d.Message.Offset))] = nack{attempts: d.Message.Attempts, reason: reason}
	s.r.mu.Unlock()
	return down("nak", m.NakWithDelay(delay))
}

// DeadLetter implements broker.Session: a consumer-side publish to the
// DLQ stream, deduplicated per group and message.
func (s *session) DeadLetter(ctx context.Context, d broker.LiveDelivery, reason string) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	dm := d.Message
	out := nats.NewMsg(s.r.dlqSubject)
	out.Data = dm.Payload
	out.Header.Set(hTopic, s.r.spec.Topic)
	out.Header.Set(hGroup, s.group)
	out.Header.Set(hOffset, strconv.FormatInt(dm.Offset, 10))
	out.Header.Set(hAttempts, strconv.Itoa(dm.Attempts))
	out.Header.Set(hLastError, reason)
	out.Header.Set(hTenant, dm.Tenant)
	out.Header.Set(hKey, dm.Key)
	out.Header.Set(hPoison, "true")
	_, err := s.js.PublishMsg(ctx, out, jetstream.WithMsgID("dlq/"+nackKey(s.group, uint64(dm.Offset))))
	return down("DLQ publish", err)
}

// Close implements broker.Session: the connection closes, acking nothing.
func (s *session) Close() error {
	s.nc.Close()
	return nil
}

// Fix says in one line how to configure JetStream so that the invariant
// holds, for a configuration that breaks it ("" if there is nothing to say).
func Fix(config, invariant string) string {
	switch {
	case config == NoDLQ && (invariant == law.NothingLost || invariant == law.DLQMetadata):
		return "JetStream has no DLQ: subscribe to $JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.<stream>.<consumer> and republish the message to dlq.<topic> with its metadata (configuration advisory-dlq)."
	case config == ShortDedupe && invariant == law.ProducerGate:
		return "Make the stream's duplicate window (Duplicates) longer than the producer's retry window: here 100ms against a retry after 250ms (JetStream forgets ids lazily, by a timer); the default is 2 minutes."
	}
	return ""
}
