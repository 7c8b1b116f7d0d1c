package brokers_test

import (
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/impl/adapter/rabbitbroker"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/system/resolve"
	"github.com/idemcheck/idemcheck/properties"
)

// proxy forwards TCP connections to a server until it is cut, which to
// its clients is the server stopping.
type proxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(s, c); s.Close() }()
			go func() { _, _ = io.Copy(c, s); c.Close() }()
		}
	}()
	t.Cleanup(p.cut)
	return p
}

// cut closes the listener and every connection.
func (p *proxy) cut() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

// TestBrokerRabbitMQStoppingMidCampaign: RabbitMQ going away mid-campaign (here
// its connections cut) ends the campaign with a broker-down error,
// promptly, and is reported as no violation.
func TestBrokerRabbitMQStoppingMidCampaign(t *testing.T) {
	raw := os.Getenv(resolve.RabbitMQURLEnv)
	if raw == "" {
		t.Skipf("%s is unset: set it to a RabbitMQ server, e.g. amqp://guest:guest@127.0.0.1:5672/", resolve.RabbitMQURLEnv)
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, u.Host)
	u.Host = p.ln.Addr().String()
	f, err := rabbitbroker.New(u.String(), rabbitbroker.Quorum)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	start := time.Now()
	rep, err := properties.RunLiveCampaign(t.Context(), properties.LiveCampaign{Factory: f, Runs: 1000, Seed: 1, Workers: 2,
		Progress: func(done int) {
			if done == 3 {
				p.cut()
			}
		}})
	if !errors.Is(err, broker.ErrBrokerDown) {
		t.Fatalf("the campaign ended with %v, want a broker-down error", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("the campaign took %s to notice the broker was gone", d)
	}
	row := brokerTable(t)["rabbitmq:quorum"]
	for _, c := range rep.Cells {
		if c.Status == properties.LiveFails && row[c.Invariant] != "fails" {
			t.Errorf("a stopped broker was reported as a violation of %s: %s", c.Invariant, c.Detail)
		}
	}
	t.Logf("stopped after %d runs in %s: %v", rep.Runs, time.Since(start), err)
}
