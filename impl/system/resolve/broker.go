package resolve

import (
	"fmt"
	"strings"

	"github.com/idemcheck/idemcheck/impl/adapter/natsbroker"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
)

// Broker opens the live broker a command line names, "BROKER[:CONFIG]":
//
//	nats[:advisory-dlq|no-dlq|short-dedupe]    NATS JetStream embedded in the process
//
// The factory is ready: an unreachable broker or a configuration it cannot
// set up is reported here. The caller closes it.
func Broker(spec string) (broker.LiveFactory, error) {
	name, config, _ := strings.Cut(spec, ":")
	switch name {
	case "nats":
		f, err := natsbroker.New(config)
		if err != nil {
			return nil, fmt.Errorf("broker %s: %w", spec, err)
		}
		return f, nil
	default:
		return nil, fmt.Errorf("unknown broker %q: want %s", spec, strings.Join(BrokerSpecs(), ", "))
	}
}

// BrokerSpecs lists every broker and configuration Broker accepts, the
// default of each broker first.
func BrokerSpecs() []string {
	var out []string
	for _, c := range natsbroker.Configs() {
		out = append(out, "nats:"+c)
	}
	return out
}
