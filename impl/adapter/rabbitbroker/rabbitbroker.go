// Package rabbitbroker is the live broker over RabbitMQ
// (impl/contract/broker.LiveFactory), through amqp091-go with manual acks.
//
// Each run gets a fanout exchange of its own and a queue per consumer
// group bound to it, named uniquely and deleted afterwards. The quorum
// configuration gives each queue x-delivery-limit and a dead-letter
// exchange routing to dlq.<topic>; attempts come from x-delivery-count
// (absent on a first delivery) and the DLQ metadata from x-death. A nack
// is basic.nack with requeue: AMQP 0-9-1 has no redelivery delay, so the
// backoff is not applied. RabbitMQ's consumer timeout is minutes long, so
// the runner ends a stalled delivery itself, after the ack timeout, by
// closing the session.
//
// The other configurations show what goes wrong: quorum-off-by-one sets
// x-delivery-limit to max_attempts (the limit counts redeliveries, not
// deliveries), and classic uses a classic queue, which has no delivery
// limit at all.
package rabbitbroker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/internal/law"
)

// URLEnv holds the AMQP URL of the server.
const URLEnv = "IDEMCHECK_RABBITMQ_URL"

// The configurations.
const (
	// Quorum: quorum queues with x-delivery-limit = max_attempts-1 and a
	// dead-letter exchange to dlq.<topic>.
	Quorum = "quorum"
	// QuorumOffByOne: x-delivery-limit = max_attempts.
	QuorumOffByOne = "quorum-off-by-one"
	// Classic: classic queues, no delivery limit, no dead-lettering.
	Classic = "classic"
)

// Configs lists the configurations, the default first.
func Configs() []string { return []string{Quorum, QuorumOffByOne, Classic} }

// Headers the adapter stamps on messages and consumer-published DLQ entries.
const (
	hTenant    = "idem-tenant"
	hKey       = "idem-key"
	hTopic     = "idem-topic"
	hGroup     = "idem-group"
	hOffset    = "idem-offset"
	hAttempts  = "idem-attempts"
	hLastError = "idem-last-error"
	hPoison    = "idem-poison"
)

// requestTimeout bounds connecting and every confirmed publish.
const requestTimeout = 5 * time.Second

// Factory opens runs on one server.
type Factory struct {
	config string
	url    string
	prefix string
	conn   *amqp.Connection
	runs   atomic.Int64
}

var _ broker.LiveFactory = (*Factory)(nil)

// New connects to the server at url with the configuration ("" is Quorum).
func New(url, config string) (*Factory, error) {
	if config == "" {
		config = Quorum
	}
	known := false
	for _, c := range Configs() {
		known = known || c == config
	}
	if !known {
		return nil, fmt.Errorf("rabbitmq: unknown configuration %q: want one of %s", config, strings.Join(Configs(), ", "))
	}
	if url == "" {
		return nil, fmt.Errorf("rabbitmq: no URL; set %s, e.g. amqp://guest:guest@127.0.0.1:5672/", URLEnv)
	}
	conn, err := dial(url)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		conn.Close()
		return nil, err
	}
	// Random, because several processes share the server; no name appears
	// in a history.
	return &Factory{config: config, url: url, conn: conn, prefix: "idemcheck." + hex.EncodeToString(b) + strconv.Itoa(os.Getpid())}, nil
}

func dial(url string) (*amqp.Connection, error) {
	conn, err := amqp.DialConfig(url, amqp.Config{Dial: amqp.DefaultDial(requestTimeout), Heartbeat: 10 * time.Second})
	var ae *amqp.Error
	if errors.As(err, &ae) && (ae.Code == amqp.AccessRefused || ae.Code == amqp.NotAllowed) {
		// The server answered: it is up, but this URL cannot be used.
		return nil, fmt.Errorf("rabbitmq %s refused the connection (check the user, password and vhost): %w", redact(url), err)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: rabbitmq %s: %w", broker.ErrBrokerDown, redact(url), err)
	}
	return conn, nil
}

// redact hides a URL's password.
func redact(url string) string {
	if u, err := amqp.ParseURI(url); err == nil {
		u.Password = "xxx"
		return u.String()
	}
	return "(unparsable URL)"
}

// Name implements broker.LiveFactory.
func (f *Factory) Name() string { return "rabbitmq:" + f.config }

// Caps implements broker.LiveFactory: no short ack timeout, no restart;
// a delivery limit on quorum queues only.
func (f *Factory) Caps() broker.LiveCaps { return broker.LiveCaps{DeliveryLimit: f.config != Classic} }

// Close implements broker.LiveFactory.
func (f *Factory) Close() error { return f.conn.Close() }

func down(what string, err error) error {
	if err == nil {
		return nil
	}
	var ae *amqp.Error
	// A frame written before the client noticed the connection was cut
	// fails with the socket's own error (a reset, a broken pipe), not
	// amqp.ErrClosed: the broker is gone all the same.
	var ne net.Error
	if errors.Is(err, amqp.ErrClosed) || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ae) && (ae.Code == amqp.ConnectionForced || ae.Code == amqp.FrameError)) ||
		errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return fmt.Errorf("%w: rabbitmq %s: %w", broker.ErrBrokerDown, what, err)
	}
	return fmt.Errorf("rabbitmq %s: %w", what, err)
}

// Open implements broker.LiveFactory.
func (f *Factory) Open(ctx context.Context, spec broker.LiveSpec) (broker.Live, error) {
	p := spec.Policy
	if p.MaxAttempts < 1 {
		return nil, fmt.Errorf("rabbitmq: policy needs maxAttempts >= 1, got %d", p.MaxAttempts)
	}
	ch, err := f.conn.Channel()
	if err != nil {
		return nil, down("channel", err)
	}
	if err := ch.Confirm(false); err != nil {
		ch.Close()
		return nil, down("confirm mode", err)
	}
	n := f.runs.Add(1)
	base := fmt.Sprintf("%s.r%d.%s", f.prefix, n, spec.Topic)
	r := &run{f: f, spec: spec, ch: ch, exchange: base, dlx: broker.DLQTopic(base) + ".x", dlq: broker.DLQTopic(base),
		queues: map[string]string{}}
	if err := r.declare(); err != nil {
		_ = r.Close()
		return nil, err
	}
	return r, nil
}

type run struct {
	f                  *Factory
	spec               broker.LiveSpec
	ch                 *amqp.Channel
	exchange, dlx, dlq string
	queues             map[string]string // group -> queue
	offsets            atomic.Int64

	mu   sync.Mutex
	read []broker.DLQEntry // DLQ entries read back so far (reading consumes them)
}

// expiresMs is the queues' x-expires: a run that cannot delete what it
// made (the broker went away mid-run) leaves nothing behind for long. The
// exchanges auto-delete with their last queue.
const expiresMs = int32(60_000)

func (r *run) declare() error {
	if err := r.ch.ExchangeDeclare(r.exchange, amqp.ExchangeFanout, false, true, false, false, nil); err != nil {
		return down("declare exchange", err)
	}
	if _, err := r.ch.QueueDeclare(r.dlq, false, false, false, false, amqp.Table{"x-expires": expiresMs}); err != nil {
		return down("declare DLQ", err)
	}
	if r.f.config != Classic {
		if err := r.ch.ExchangeDeclare(r.dlx, amqp.ExchangeFanout, false, true, false, false, nil); err != nil {
			return down("declare dead-letter exchange", err)
		}
		if err := r.ch.QueueBind(r.dlq, "", r.dlx, false, nil); err != nil {
			return down("bind DLQ", err)
		}
	}
	for _, g := range r.spec.Groups {
		q := r.exchange + "." + g
		args := amqp.Table{"x-expires": expiresMs}
		durable := false
		if r.f.config != Classic {
			durable = true // quorum queues are always durable
			args["x-queue-type"] = "quorum"
			args["x-delivery-limit"] = int32(r.limit())
			args["x-dead-letter-exchange"] = r.dlx
		}
		if _, err := r.ch.QueueDeclare(q, durable, false, false, false, args); err != nil {
			return down("declare queue "+q, err)
		}
		if err := r.ch.QueueBind(q, "", r.exchange, false, nil); err != nil {
			return down("bind queue "+q, err)
		}
		r.queues[g] = q
	}
	return nil
}

// limit is the queues' x-delivery-limit: the redeliveries allowed.
func (r *run) limit() int {
	if r.f.config == QuorumOffByOne {
		return r.spec.Policy.MaxAttempts
	}
	return r.spec.Policy.MaxAttempts - 1
}

// Produce implements broker.Live: a confirmed publish. RabbitMQ has no
// produce dedupe: a repeat is always enqueued.
func (r *run) Produce(ctx context.Context, tenant, key string, payload []byte) (broker.ProduceResult, error) {
	off := r.offsets.Add(1)
	pub := amqp.Publishing{Body: payload, MessageId: key, DeliveryMode: amqp.Persistent,
		Headers: amqp.Table{hTenant: tenant, hKey: key, hOffset: off}}
	if err := r.publish(ctx, r.exchange, "", pub); err != nil {
		return broker.ProduceResult{}, err
	}
	return broker.ProduceResult{Offset: off}, nil
}

func (r *run) publish(ctx context.Context, exchange, key string, pub amqp.Publishing) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	r.mu.Lock()
	dc, err := r.ch.PublishWithDeferredConfirmWithContext(ctx, exchange, key, false, false, pub)
	r.mu.Unlock()
	if err != nil {
		return down("publish", err)
	}
	ok, err := dc.WaitContext(ctx)
	if err != nil {
		return down("publish confirm", err)
	}
	if !ok {
		return fmt.Errorf("rabbitmq: the server nacked a publish to %q", exchange)
	}
	return nil
}

// DLQ implements broker.Live: it drains dlq.<topic> and returns every
// entry read so far.
func (r *run) DLQ(context.Context) ([]broker.DLQEntry, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		d, ok, err := r.ch.Get(r.dlq, true)
		if err != nil {
			return nil, down("read DLQ", err)
		}
		if !ok {
			break
		}
		r.read = append(r.read, r.entry(d))
	}
	return append([]broker.DLQEntry(nil), r.read...), nil
}

// entry decodes a DLQ message: a consumer's publish carries our headers; a
// dead-lettered one carries x-death and x-delivery-count.
func (r *run) entry(d amqp.Delivery) broker.DLQEntry {
	e := broker.DLQEntry{Topic: str(d.Headers[hTopic]), Group: str(d.Headers[hGroup]), Tenant: str(d.Headers[hTenant]),
		Key: str(d.Headers[hKey]), Offset: num(d.Headers[hOffset]), Attempts: int(num(d.Headers[hAttempts])),
		LastError: str(d.Headers[hLastError]), Poison: str(d.Headers[hPoison]) == "true"}
	if deaths, ok := d.Headers["x-death"].([]any); ok && len(deaths) > 0 && !e.Poison {
		if death, ok := deaths[0].(amqp.Table); ok {
			e.LastError = str(death["reason"])
			e.Topic = r.spec.Topic
			for g, q := range r.queues {
				if q == str(death["queue"]) {
					e.Group = g
				}
			}
		}
		// The dead-lettered message carries no delivery count; the reason
		// delivery_limit means the queue's limit was passed: limit+1
		// deliveries.
		if e.LastError == "delivery_limit" {
			e.Attempts = r.limit() + 1
		}
	}
	return e
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func num(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case int32:
		return int64(n)
	case int:
		return int64(n)
	case int16:
		return int64(n)
	case uint8:
		return int64(n)
	}
	return 0
}

// Close implements broker.Live: the run's queues and exchanges go.
func (r *run) Close() error {
	var errs []error
	for _, q := range r.queues {
		if _, err := r.ch.QueueDelete(q, false, false, false); err != nil {
			errs = append(errs, down("delete "+q, err))
		}
	}
	if _, err := r.ch.QueueDelete(r.dlq, false, false, false); err != nil {
		errs = append(errs, down("delete "+r.dlq, err))
	}
	for _, x := range []string{r.exchange, r.dlx} {
		if err := r.ch.ExchangeDelete(x, false, false); err != nil {
			errs = append(errs, down("delete "+x, err))
		}
	}
	return errors.Join(append(errs, r.ch.Close())...)
}

// Session implements broker.Live: a connection of its own, so that Close
// is a consumer crash and the server requeues what it held.
func (r *run) Session(_ context.Context, group string) (broker.Session, error) {
	q, ok := r.queues[group]
	if !ok {
		return nil, fmt.Errorf("rabbitmq: %q is not a group of the run", group)
	}
	conn, err := dial(r.f.url)
	if err != nil {
		return nil, err
	}
	ch, err := conn.Channel()
	if err != nil {
		conn.Close()
		return nil, down("channel", err)
	}
	if err := ch.Confirm(false); err != nil {
		conn.Close()
		return nil, down("confirm mode", err)
	}
	return &session{r: r, group: group, queue: q, conn: conn, ch: ch}, nil
}

type session struct {
	r     *run
	group string
	queue string
	conn  *amqp.Connection
	ch    *amqp.Channel
}

// poll is the pause between two empty basic.get.
const poll = 2 * time.Millisecond

// Next implements broker.Session with basic.get.
func (s *session) Next(ctx context.Context, wait time.Duration) (broker.LiveDelivery, bool, error) {
	deadline := time.Now().Add(wait)
	for {
		d, ok, err := s.ch.Get(s.queue, false)
		if err != nil {
			return broker.LiveDelivery{}, false, down("get", err)
		}
		if ok {
			return s.delivery(d), true, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return broker.LiveDelivery{}, false, nil
		}
		time.Sleep(poll)
	}
}

func (s *session) delivery(d amqp.Delivery) broker.LiveDelivery {
	attempts := 1
	if n, ok := d.Headers["x-delivery-count"]; ok {
		attempts = int(num(n)) + 1
	} else if d.Redelivered {
		// A classic queue keeps no count, only the redelivered flag.
		attempts = 2
	}
	m := broker.Message{Topic: s.r.spec.Topic, Offset: num(d.Headers[hOffset]), Group: s.group, Tenant: str(d.Headers[hTenant]),
		Key: str(d.Headers[hKey]), Payload: d.Body, Origin: broker.Produced, Attempts: attempts}
	return broker.LiveDelivery{Message: m, Ref: d}
}

func (s *session) tag(d broker.LiveDelivery) (amqp.Delivery, error) {
	ad, ok := d.Ref.(amqp.Delivery)
	if !ok {
		return amqp.Delivery{}, fmt.Errorf("rabbitmq: delivery of offset %d is not from this adapter", d.Message.Offset)
	}
	return ad, nil
}

// Ack implements broker.Session.
func (s *session) Ack(_ context.Context, d broker.LiveDelivery) error {
	ad, err := s.tag(d)
	if err != nil {
		return err
	}
	return down("ack", s.ch.Ack(ad.DeliveryTag, false))
}

// Nack implements broker.Session: basic.nack with requeue. The reason and
// the delay have nowhere to go in AMQP 0-9-1.
func (s *session) Nack(_ context.Context, d broker.LiveDelivery, _ time.Duration, _ string) error {
	ad, err := s.tag(d)
	if err != nil {
		return err
	}
	return down("nack", s.ch.Nack(ad.DeliveryTag, false, true))
}

// DeadLetter implements broker.Session: a confirmed publish straight to
// dlq.<topic> with the metadata as headers.
func (s *session) DeadLetter(ctx context.Context, d broker.LiveDelivery, reason string) error {
	m := d.Message
	pub := amqp.Publishing{Body: m.Payload, DeliveryMode: amqp.Persistent, Headers: amqp.Table{
		hTopic: s.r.spec.Topic, hGroup: s.group, hOffset: m.Offset, hAttempts: int64(m.Attempts), hLastError: reason,
		hTenant: m.Tenant, hKey: m.Key, hPoison: "true"}}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	dc, err := s.ch.PublishWithDeferredConfirmWithContext(ctx, "", s.r.dlq, false, false, pub)
	if err != nil {
		return down("DLQ publish", err)
	}
	if ok, err := dc.WaitContext(ctx); err != nil || !ok {
		return down("DLQ publish confirm", errors.Join(err, errors.New("not confirmed")))
	}
	return nil
}

// Close implements broker.Session: the connection closes with its
// deliveries unacked.
func (s *session) Close() error {
	return s.conn.Close()
}

// Fix says in one line how to configure RabbitMQ so that the invariant
// holds, for a configuration that breaks it ("" if there is nothing to say).
func Fix(config, invariant string) string {
	switch {
	case invariant == law.ProducerGate:
		return "RabbitMQ drops no repeated publish: gate the producer yourself (an outbox or a keyed produce record, COMMITTED before the retry) and keep the consumer's claim store."
	case config == Classic && invariant == law.BoundedAttempts:
		return "A classic queue has no delivery limit: use a quorum queue with x-delivery-limit = max_attempts-1 and a dead-letter exchange to dlq.<topic>."
	case config == QuorumOffByOne && invariant == law.BoundedAttempts:
		return "x-delivery-limit counts redeliveries, not deliveries: set it to max_attempts-1."
	case config == QuorumOffByOne && invariant == law.DLQMetadata:
		return "Set x-delivery-limit to max_attempts-1, and dead-letter the last attempt yourself with its error: x-death records only the reason delivery_limit."
	case invariant == law.DLQMetadata:
		return "x-death records only the reason delivery_limit, not the handler's error: on the last attempt (x-delivery-count = max_attempts-1) publish to dlq.<topic> with the error yourself, then ack."
	}
	return ""
}
