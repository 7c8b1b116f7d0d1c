// Package ext is where the adapters of real servers and brokers register
// into fuzzrun. The default fuzzrun binary links none of them, so that it
// builds fast from an empty cache; package servers registers them all, and
// fuzzrun imports it only when built with -tags servers (its tests import
// it too, so that plain go test covers every command).
package ext

import (
	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/system"
)

// Tag is the build tag that links package servers into fuzzrun.
const Tag = "servers"

// ServerTargets are the targets over real systems that only Servers opens,
// named even when nothing registered them, so that asking for one says
// which build has it.
var ServerTargets = []string{"sqlite", "sqlite-file", "postgres", "redis"}

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
	LiveApp func(c consumertest.Consumer) (func() (runner.LiveApp, error), error)
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
