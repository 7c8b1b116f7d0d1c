package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/cmd/fuzzrun/internal/ext"
	"github.com/idemcheck/idemcheck/internal/consumerharness"
)

// logFaults is how many faults (crash, rebalance, replay) each live run
// of a log consumer plays.
const logFaults = 3

// runBrokerLog runs a team's log consumer (Consumer.Log) live on kfake:
// fuzzrun broker kafka -consumer logoffsets. Each run is a scenario of
// its own seed; a breach counts only once a replay of its scenario
// confirms it, and one no replay reproduces is reported as unconfirmed.
func runBrokerLog(ctx context.Context, o *options, c consumerharness.Consumer, stdout, stderr io.Writer) int {
	if name, _, _ := strings.Cut(o.broker, ":"); name != "kafka" {
		return say(stderr, exitUsage, "-consumer %s: a log consumer runs live over kafka (kfake), not %s", o.consumer, o.broker)
	}
	if o.json {
		return say(stderr, exitUsage, "-json: a log consumer's live runs print their report as text")
	}
	if o.replay != "" {
		return say(stderr, exitUsage, "-replay: a log consumer's live runs save no corpus case; -seed N -checks 1 plays a run again")
	}
	seed := o.seed
	if !o.seedGiven {
		seed = uint64(time.Now().UnixNano() % 1_000_000)
	}
	fmt.Fprintf(stderr, "fuzzrun: log consumer %s live on kafka (kfake), seed %d, budget %s\n", c.Name, seed, o.duration)
	start := time.Now()
	var runs, unconfirmed int64
	for ctx.Err() == nil && (o.checks <= 0 || runs < o.checks) && (o.checks > 0 || o.duration <= 0 || time.Since(start) < o.duration) {
		report, failed, unc, err := ext.Registered.LiveLog(ctx, c, 1, seed+uint64(runs), logFaults)
		if err != nil && ctx.Err() == nil {
			return failed2(stderr, c.Name, err)
		}
		runs++
		unconfirmed += int64(unc)
		if failed {
			fmt.Fprint(stdout, report)
			fmt.Fprintf(stdout, "replay: go run -tags servers ./cmd/fuzzrun broker %s -consumer %s -seed %d -checks 1\n", o.broker, shellQuote(o.consumer), seed+uint64(runs-1))
			return exitViolation
		}
		if unc > 0 {
			fmt.Fprint(stderr, report)
		}
	}
	verdict, code := verdictOf(false, ctx.Err() != nil, runs)
	fmt.Fprintf(stdout, "%s %s: no law broken in %d live run(s) (%s); %d breach(es) unconfirmed\n", strings.ToUpper(verdict), c.Name, runs, time.Since(start).Round(time.Millisecond), unconfirmed)
	return code
}

func failed2(stderr io.Writer, name string, err error) int {
	code := exitInternal
	if strings.Contains(err.Error(), consumerharness.ErrBadInput.Error()) {
		code = exitUsage
	}
	return say(stderr, code, "consumer %s: %v", name, err)
}
