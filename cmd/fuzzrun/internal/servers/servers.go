// Package servers registers into fuzzrun (package ext) the adapters of real
// servers and brokers: the targets sqlite, sqlite-file, postgres and redis
// (package resolve), the live brokers of fuzzrun broker (embedded NATS
// JetStream, RabbitMQ, Kafka's protocol on kfake), the live application
// that drives a team's consumer by a broker, and the example consumers
// over real servers (redissetnx, on Redis). fuzzrun imports it when built
// with -tags servers; importing it is all it takes.
package servers

import (
	"context"
	"slices"

	"github.com/idemcheck/idemcheck/cmd/fuzzrun/internal/ext"
	"github.com/idemcheck/idemcheck/conformance/brokers/liveapp"
	"github.com/idemcheck/idemcheck/impl/system/resolve"
	"github.com/idemcheck/idemcheck/internal/consumerharness"
	"github.com/idemcheck/idemcheck/internal/consumerharness/livelog"
)

func init() { ext.Register(Servers()) }

// Servers are the adapters, as package ext takes them.
func Servers() *ext.Servers {
	var targets []ext.Target
	for _, t := range resolve.ExternalTargets() {
		if slices.Contains(ext.ServerTargets, t.Spec) {
			targets = append(targets, ext.Target{Spec: t.Spec, Doc: t.Doc})
		}
	}
	return &ext.Servers{
		Targets:     targets,
		Resolve:     resolve.Resolve,
		Broker:      resolve.Broker,
		BrokerFix:   resolve.BrokerFix,
		BrokerSpecs: resolve.BrokerSpecs,
		LiveApp:     liveapp.New,
		LiveLog:     liveLog,
		Consumers:   consumers,
		Consumer:    openConsumer,
	}
}

// liveLog runs a live campaign of a team's log consumer on kfake
// (package livelog).
func liveLog(ctx context.Context, c consumerharness.Consumer, runs int, seed uint64, faults int) (string, bool, int, error) {
	res, err := livelog.Check(ctx, c, livelog.Options{Runs: runs, Seed: seed, Faults: faults})
	return res.Report(), res.Failed, len(res.Unconfirmed), err
}
