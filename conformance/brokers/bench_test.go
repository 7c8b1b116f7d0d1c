package brokers_test

import (
	"os"
	"testing"

	"github.com/idemcheck/idemcheck/impl/system/resolve"
	"github.com/idemcheck/idemcheck/properties"
)

// benchWorkers runs scenarios in parallel: a live run mostly waits for
// the broker's timers (ack timeouts, backoff, the quiet period), so more
// runs than cores keep the cores busy.
const benchWorkers = 32

// benchLive runs a campaign of b.N checked scenarios (each judged, each
// failure re-run to confirm) and reports scenarios/s and deliveries/s.
func benchLive(b *testing.B, spec string) {
	f, err := resolve.Broker(spec)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	b.ResetTimer()
	rep, err := properties.RunLiveCampaign(b.Context(), properties.LiveCampaign{Factory: f, Runs: b.N, Seed: 1, Workers: benchWorkers})
	if err != nil {
		b.Fatal(err)
	}
	s := rep.Elapsed.Seconds()
	b.ReportMetric(float64(rep.Runs)/s, "scenarios/s")
	b.ReportMetric(float64(rep.Deliveries)/s, "deliveries/s")
}

// BenchmarkLiveNATS: embedded JetStream with the advisory DLQ.
func BenchmarkLiveNATS(b *testing.B) { benchLive(b, "nats:advisory-dlq") }

// BenchmarkLiveRabbitMQ: RabbitMQ quorum queues.
func BenchmarkLiveRabbitMQ(b *testing.B) {
	if os.Getenv(resolve.RabbitMQURLEnv) == "" {
		b.Skipf("%s is unset: set it to a RabbitMQ server", resolve.RabbitMQURLEnv)
	}
	benchLive(b, "rabbitmq:quorum")
}
