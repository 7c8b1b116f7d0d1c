package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/impl/adapter/consumerproc"
	"github.com/idemcheck/idemcheck/impl/system/resolve"
)

func init() {
	registerConsumerScheme("exec", "a process in any language speaking the consumer protocol (impl/adapter/consumerproc/PROTOCOL.md); its hello declares its schema and effects query",
		resolveExecConsumer)
}

// resolveExecConsumer starts the command once to read what it declares in
// its hello (schema, effects query, dedupe query), and returns a consumer
// that runs one process per worker. A command that cannot start, fails the
// handshake or declares no effects query is an error, which -consumer
// reports as a usage error.
func resolveExecConsumer(arg string) (consumertest.Consumer, io.Closer, error) {
	argv, err := consumerproc.ParseCommand(arg)
	if err != nil {
		return consumertest.Consumer{}, nil, err
	}
	opts := consumerproc.Options{}
	if v := os.Getenv(resolve.ExecTimeoutEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return consumertest.Consumer{}, nil, fmt.Errorf("%s=%q: want a positive Go duration such as 5s", resolve.ExecTimeoutEnv, v)
		}
		opts.Timeout = d
	}
	d, err := consumerproc.Declare(argv, opts)
	if err != nil {
		return consumertest.Consumer{}, nil, err
	}
	if d.Effects == "" {
		return consumertest.Consumer{}, nil, fmt.Errorf("%q declares no effects query in its hello (the \"effects\" field): the harness cannot judge what it did", arg)
	}
	effects := consumertest.PerEvent(d.Effects)
	if d.Aggregate {
		effects = consumertest.Aggregate(d.Effects)
	}
	return consumertest.Consumer{Schema: d.Schema, Worker: consumerproc.Worker(argv, opts), Effects: effects, Dedupe: d.Dedupe}, nil, nil
}
