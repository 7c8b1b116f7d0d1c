package brokers_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/idemcheck/idemcheck/impl/system/resolve"
	"github.com/idemcheck/idemcheck/properties"
)

// benchWorkers are the runs in flight: a live run mostly waits for the
// broker's timers (ack timeouts, backoff, the quiet period), so more runs
// than cores keep the cores busy (32), at the price of runs that miss
// their timing on 2 cores; 4 keeps most runs on time.
var benchWorkers = []int{4, 32}

// benchLive runs, for each of benchWorkers, a campaign of b.N checked
// scenarios (each judged, each failure re-run to confirm) and reports
// scenarios/s, deliveries/s and the late runs.
func benchLive(b *testing.B, spec string) {
	for _, w := range benchWorkers {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) { benchLiveWorkers(b, spec, w) })
	}
}

func benchLiveWorkers(b *testing.B, spec string, workers int) {
	f, err := resolve.Broker(spec)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	b.ResetTimer()
	rep, err := properties.RunLiveCampaign(b.Context(), properties.LiveCampaign{Factory: f, Runs: b.N, Seed: 1, Workers: workers})
	if err != nil {
		b.Fatal(err)
	}
	s := rep.Elapsed.Seconds()
	b.ReportMetric(float64(rep.Runs)/s, "scenarios/s")
	b.ReportMetric(float64(rep.Deliveries)/s, "deliveries/s")
	// Runs that missed their timing (the machine too loaded): each was
	// judged no violation, and each failing one was played again.
	b.ReportMetric(float64(rep.LateRuns), "late-runs")
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
