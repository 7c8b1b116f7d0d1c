// Package ext is where the adapters of real servers and brokers register
// into fuzzrun. The default fuzzrun binary links none of them, so that it
// builds fast from an empty cache; package servers registers them all, and
// fuzzrun imports it only when built with -tags servers (its tests import
// it too, so that plain go test covers every command).
package ext

import (
	"context"
	"io"

	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/internal/consumerharness"
)

// Tag is the build tag that links package servers into fuzzrun.
const Tag = "servers"

// ServerTargets are the targets over real systems that only Servers opens,
// named even when nothing registered them, so that asking for one says
// which build has it.
var ServerTargets = []string{"sqlite", "sqlite-file", "postgres", "redis"}

// ServerConsumers are the example consumers that need a real server
// (redissetnx: Redis), named even when nothing registered them, so that
// fuzzrun consumer NAME in a build without them says which build has them.
var ServerConsumers = []string{"redissetnx"}

// Consumer describes one example consumer Servers opens.
type Consumer struct {
	// Name is the consumer's name (fuzzrun consumer NAME); Law the law it
	// breaks ("" for a correct one); Doc what it does, in one line.
	Name, Law, Doc string
	// Serial is true when its scenarios must play one at a time (state on
	// the server keyed per scenario by the order its workers start): a
	// model check of it searches on one goroutine.
	Serial bool
}

// Target describes one target Servers opens.
type Target struct {
	Spec, Doc string
}

// Servers are the adapters of real servers and brokers.
type Servers struct {
	// Targets describes the targets Resolve opens (ServerTargets).
	Targets []Target
	// Resolve opens one of Targets.
	Resolve func(spec string) (system.Target, error)
	// Broker opens a live broker, "BROKER[:CONFIG]"; BrokerFix says how to
	// configure it so that an invariant holds; BrokerSpecs lists every
	// broker and configuration, each broker's default first.
	Broker      func(spec string) (broker.LiveFactory, error)
	BrokerFix   func(spec, invariant string) string
	BrokerSpecs func() []string
	// LiveApp wraps a team's consumer as the application a live run drives.
	LiveApp func(c consumerharness.Consumer) (func() (runner.LiveApp, error), error)
	// LiveLog plays a team's log consumer (Consumer.Log) live on kfake,
	// runs scenarios from seed with faults faults each, and says the
	// verdict: the report, whether a breach was confirmed, and how many
	// were not.
	LiveLog func(ctx context.Context, c consumerharness.Consumer, runs int, seed uint64, faults int) (report string, failed bool, unconfirmed int, err error)
	// Consumers describes the example consumers Consumer opens
	// (ServerConsumers); Consumer opens one, connected to its server, and
	// what to close when the run ends.
	Consumers []Consumer
	Consumer  func(name string) (consumerharness.Consumer, io.Closer, error)
}

// Registered is what registered, nil in the default build.
var Registered *Servers

// Register sets Registered; call it once, from an init function.
func Register(s *Servers) {
	if Registered != nil {
		panic("fuzzrun/internal/ext: servers registered twice")
	}
	Registered = s
}
