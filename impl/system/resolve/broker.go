package resolve

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/impl/adapter/kafkabroker"
	"github.com/idemcheck/idemcheck/impl/adapter/natsbroker"
	"github.com/idemcheck/idemcheck/impl/adapter/rabbitbroker"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
)

// RabbitMQURLEnv holds the AMQP URL of "rabbitmq".
const RabbitMQURLEnv = rabbitbroker.URLEnv

// Broker opens the live broker a command line names, "BROKER[:CONFIG]":
//
//	nats[:advisory-dlq|no-dlq|short-dedupe]        NATS JetStream embedded in the process
//	rabbitmq[:quorum|quorum-off-by-one|classic]    RabbitMQ at $IDEMCHECK_RABBITMQ_URL
//	kafka[:kfake]                                  Kafka's protocol on franz-go's in-process kfake cluster (a fake, not Kafka)
//
// The factory is ready: Broker sets up and deletes one run first, so an
// unreachable broker or a configuration it cannot set up is reported
// here, once. The caller closes the factory.
func Broker(spec string) (broker.LiveFactory, error) {
	name, config, _ := strings.Cut(spec, ":")
	var (
		f   broker.LiveFactory
		err error
	)
	switch name {
	case "nats":
		f, err = natsbroker.New(config)
	case "rabbitmq":
		url := os.Getenv(RabbitMQURLEnv)
		if url == "" {
			return nil, fmt.Errorf("broker %s: %s is unset; set it to an AMQP URL, e.g. amqp://guest:guest@127.0.0.1:5672/", spec, RabbitMQURLEnv)
		}
		f, err = rabbitbroker.New(url, config)
	case "kafka":
		f, err = kafkabroker.New(config)
	default:
		return nil, fmt.Errorf("unknown broker %q: want one of %s", spec, strings.Join(BrokerSpecs(), ", "))
	}
	if err != nil {
		return nil, fmt.Errorf("broker %s: %w", spec, err)
	}
	if err := probeBroker(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("broker %s: %w", spec, err)
	}
	return f, nil
}

// probeBroker sets up one run and deletes it.
func probeBroker(f broker.LiveFactory) error {
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	l, err := f.Open(ctx, broker.LiveSpec{Topic: "probe", Groups: []string{"probe"},
		Policy: broker.Policy{MaxAttempts: 2, BackoffMs: 1, MaxBackoffMs: 1, AckTimeoutMs: 100}})
	if err != nil {
		return fmt.Errorf("set up a run: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- l.Close() }()
	select {
	case err := <-done:
		return err
	case <-time.After(openTimeout):
		return errors.New("deleting a run timed out")
	}
}

// BrokerFix says in one line how to configure the broker of spec so that
// the invariant holds ("" if there is nothing to say).
func BrokerFix(spec, invariant string) string {
	name, config, _ := strings.Cut(spec, ":")
	switch name {
	case "nats":
		return natsbroker.Fix(cmpOr(config, natsbroker.AdvisoryDLQ), invariant)
	case "rabbitmq":
		return rabbitbroker.Fix(cmpOr(config, rabbitbroker.Quorum), invariant)
	case "kafka":
		return kafkabroker.Fix(cmpOr(config, kafkabroker.KFake), invariant)
	}
	return ""
}

// BrokerSpecs lists every broker and configuration Broker accepts, the
// default of each broker first.
func BrokerSpecs() []string {
	var out []string
	for _, c := range natsbroker.Configs() {
		out = append(out, "nats:"+c)
	}
	for _, c := range rabbitbroker.Configs() {
		out = append(out, "rabbitmq:"+c)
	}
	for _, c := range kafkabroker.Configs() {
		out = append(out, "kafka:"+c)
	}
	return out
}
