package rabbitbroker_test

import (
	"os"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/idemcheck/idemcheck/impl/adapter/rabbitbroker"
	"github.com/idemcheck/idemcheck/impl/contract/broker/livetest"
)

func factory(t *testing.T, config string) *rabbitbroker.Factory {
	t.Helper()
	url := os.Getenv(rabbitbroker.URLEnv)
	if url == "" {
		t.Skipf("%s is unset: set it to a RabbitMQ server, e.g. amqp://guest:guest@127.0.0.1:5672/", rabbitbroker.URLEnv)
	}
	f, err := rabbitbroker.New(url, config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

func TestLiveContractQuorum(t *testing.T) {
	t.Parallel()
	livetest.Run(t, factory(t, rabbitbroker.Quorum), livetest.Claims{Bounded: true, DLQ: true, Counts: true})
}

func TestLiveContractClassic(t *testing.T) {
	t.Parallel()
	livetest.Run(t, factory(t, rabbitbroker.Classic), livetest.Claims{})
}

func TestUnknownConfigAndClosedPort(t *testing.T) {
	if _, err := rabbitbroker.New("amqp://guest:guest@127.0.0.1:5672/", "nope"); err == nil {
		t.Fatal("an unknown configuration opened")
	}
	_, err := rabbitbroker.New("amqp://guest:guest@127.0.0.1:1/", "")
	if !livetest.IsDown(err) {
		t.Fatalf("a closed port: got %v, want a broker-down error", err)
	}
}

// TestLiveRefusedConnection: a server that answers but refuses the URL's
// user or vhost is no broker-down error: it names what to check.
func TestLiveRefusedConnection(t *testing.T) {
	url := os.Getenv(rabbitbroker.URLEnv)
	if url == "" {
		t.Skipf("%s is unset: set it to a RabbitMQ server, e.g. amqp://guest:guest@127.0.0.1:5672/", rabbitbroker.URLEnv)
	}
	u, err := amqp.ParseURI(url)
	if err != nil {
		t.Fatal(err)
	}
	u.Vhost = "idemcheck-no-such-vhost"
	_, err = rabbitbroker.New(u.String(), "")
	if err == nil || livetest.IsDown(err) || !strings.Contains(err.Error(), "refused the connection") {
		t.Fatalf("an unknown vhost: got %v, want a refusal naming the vhost to check", err)
	}
}
