package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/idemcheck/idemcheck/cmd/fuzzrun/internal/ext"
	"github.com/idemcheck/idemcheck/corpus"
	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/properties"
)

// A fuzzrun broker campaign draws live scenarios (faults/gen.Live), plays them
// against a real broker in real time with the -target's store and
// pipeline, judges each recorded history, and re-runs every failure up to
// properties.ConfirmRuns times: a failure no re-run reproduces is reported
// as unconfirmed, never as a violation. Confirmed counterexamples are
// saved under corpus/brokers, one file per broker, configuration and
// invariant.

// checkBroker rejects a budget that never ends, a target beside a team's
// consumer, and a target a broker campaign cannot drive.
func (o *options) checkBroker(given map[string]bool) error {
	if o.consumer != "" && given["target"] {
		return usagef("-target: fuzzrun broker -consumer takes no -target (the team's consumer replaces the target)")
	}
	if o.replay == "" {
		if err := o.checkBudget(); err != nil {
			return err
		}
	}
	if o.target.Consumption == nil {
		return usagef("-target: %q takes no part in consumption runs, which a broker campaign needs", o.target.Name)
	}
	return nil
}

// brokerConsumer resolves -consumer for a fuzzrun broker campaign into the
// application each live run drives (nil without -consumer), and the name
// the report and the corpus give it.
func brokerConsumer(o *options) (func() (runner.LiveApp, error), string, io.Closer, error) {
	if o.consumer == "" {
		return nil, "", nil, nil
	}
	c, closer, err := resolveConsumer(o.consumer, "sqlite")
	if err != nil {
		return nil, "", nil, err
	}
	app, err := ext.Registered.LiveApp(c)
	var probe runner.LiveApp
	if err == nil {
		// Set the consumer up once (its schema on a fresh database, its
		// worker), so that a schema that fails is said at once, not
		// mid-campaign.
		probe, err = app()
	}
	if err == nil {
		_, err = probe.Group(context.Background(), "probe")
		err = errors.Join(err, probe.Close())
	}
	if err != nil {
		if closer != nil {
			closer.Close()
		}
		return nil, "", nil, usagef("-consumer: %v", err)
	}
	name := c.Name
	if name == "" {
		name = safeConsumerName(o.consumer)
	}
	return app, name, closer, nil
}

// brokerJSON is the fuzzrun broker -json output.
type brokerJSON struct {
	*properties.LiveReport
	Target          string   `json:"target"`
	Seed            uint64   `json:"seed"`
	ScenariosPerSec float64  `json:"scenariosPerSec"`
	DeliveriesPerS  float64  `json:"deliveriesPerSec"`
	Saved           []string `json:"saved,omitempty"`
	Interrupted     bool     `json:"interrupted,omitempty"`
	// Verdict is pass, violation, interrupted or inconclusive (no
	// scenario played).
	Verdict string `json:"verdict"`
	Exit    int    `json:"exit"`
}

// runBroker runs a live broker campaign.
func runBroker(ctx context.Context, o *options, stdout, stderr io.Writer) int {
	if o.consumer != "" {
		// A log consumer is played by its own live driver (broker_log.go).
		if c, closer, err := resolveConsumer(o.consumer, "sqlite"); err == nil && c.Log != nil {
			if closer != nil {
				defer closer.Close()
			}
			return runBrokerLog(ctx, o, c, stdout, stderr)
		} else if closer != nil {
			closer.Close()
		}
	}
	app, consumerName, closer, err := brokerConsumer(o)
	if err != nil {
		return say(stderr, exitUsage, "%v", err)
	}
	if closer != nil {
		defer closer.Close()
	}
	f, err := ext.Registered.Broker(o.broker)
	if err != nil {
		return say(stderr, exitUsage, "broker: %v", err)
	}
	defer f.Close()
	target := o.target.Name
	if app != nil {
		target = "consumer " + consumerName
	}
	if o.replay != "" {
		return replayBroker(ctx, o, properties.LiveCampaign{Factory: f, Parts: o.target.Consumption, App: app}, stdout, stderr)
	}
	runs := math.MaxInt
	if o.checks > 0 {
		runs = int(o.checks)
	}
	seed := o.seed
	if !o.seedGiven {
		seed = uint64(time.Now().UnixNano() % 1_000_000)
	}
	fmt.Fprintf(stderr, "fuzzrun: broker %s, target %s, seed %d, %d workers, budget %s\n", f.Name(), target, seed, o.workers, o.duration)
	c := properties.LiveCampaign{Factory: f, Parts: o.target.Consumption, App: app, Runs: runs, Seed: int(seed % math.MaxInt32),
		Workers: o.workers, Budget: o.duration}
	rep, err := properties.RunLiveCampaign(ctx, c)
	interrupted := false
	switch {
	case errors.Is(err, broker.ErrBrokerDown):
		return say(stderr, exitUsage, "broker %s: the broker stopped answering mid-campaign after %d runs: %v", o.broker, rep.Runs, err)
	case ctx.Err() != nil:
		interrupted = true
		fmt.Fprintf(stderr, "fuzzrun: interrupted after %d runs\n", rep.Runs)
	case err != nil:
		return say(stderr, exitInternal, "broker %s: %v", o.broker, err)
	}
	out := brokerJSON{LiveReport: rep, Target: target, Seed: seed, Interrupted: interrupted}
	if rep.Runs == 0 {
		// No run judged any invariant: none holds, none was checked.
		for i := range rep.Cells {
			if rep.Cells[i].Status == properties.LiveHolds {
				rep.Cells[i].Status = statusUnchecked
			}
		}
	}
	out.ScenariosPerSec, out.DeliveriesPerS = perSecond(rep.Runs, rep.Elapsed), perSecond(rep.Deliveries, rep.Elapsed)
	violated := false
	for _, cell := range rep.Cells {
		if cell.Status != properties.LiveFails {
			continue
		}
		violated = true
		if o.corpusDir == "" {
			continue
		}
		small, detail, err := properties.ShrinkLive(ctx, c, cell.Scenario, cell.Invariant)
		if err != nil {
			fmt.Fprintf(stderr, "fuzzrun: shrinking the %s counterexample stopped: %v\n", cell.Invariant, err)
		}
		if detail == "" {
			detail = cell.Detail
		}
		fix := ext.Registered.BrokerFix(rep.Broker, cell.Invariant)
		switch {
		case fix == "" && app != nil:
			fix = "The reference consumer keeps " + cell.Invariant + " over this configuration, so the consumer " + consumerName +
				" breaks it: dedupe in the database, in the effect's own transaction (fuzzrun consumer " + consumerName + " finds its smallest case)."
		case fix == "":
			fix = "(no configuration of this broker is known to make it hold)"
		}
		path, err := corpus.WriteBrokerCase(o.corpusDir, &corpus.BrokerCase{Broker: rep.Broker, Consumer: consumerName, Invariant: cell.Invariant,
			Detail: detail, Fix: fix, Seed: cell.Seed, Scenario: small})
		if err != nil {
			return say(stderr, exitInternal, "%v", err)
		}
		out.Saved = append(out.Saved, path)
	}
	out.Verdict, out.Exit = verdictOf(violated, interrupted, int64(rep.Runs))
	if o.json {
		return writeJSONOr(stdout, out, out.Exit)
	}
	printBroker(stdout, out, o.verbose)
	if line := shortRun(out.Verdict, "", "scenarios", int64(rep.Runs), rep.Elapsed, o.duration.String(), ""); line != "" {
		fmt.Fprintln(stdout, line)
	}
	return out.Exit
}

func printBroker(w io.Writer, r brokerJSON, verbose bool) {
	fmt.Fprintf(w, "broker %s, target %s: %d scenarios, %d deliveries in %s (%.1f scenarios/s, %.1f deliveries/s)\n",
		r.Broker, r.Target, r.Runs, r.Deliveries, r.Elapsed.Round(time.Millisecond), r.ScenariosPerSec, r.DeliveriesPerS)
	if r.LateRuns > 0 {
		fmt.Fprintf(w, "%d run(s) missed their timing (starved past the ack timeout; longest lag %dms): played again, never counted as violations\n", r.LateRuns, r.MaxLagMs)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range r.Cells {
		line := fmt.Sprintf("  %s\t%s", c.Invariant, c.Status)
		if c.Detail != "" {
			line += fmt.Sprintf("\tseed %d: %s", c.Seed, c.Detail)
		}
		if c.Unconfirmed > 0 {
			line += fmt.Sprintf(" (%d unconfirmed)", c.Unconfirmed)
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
	for _, c := range r.Cells {
		if !verbose || len(c.Trace) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s, %s (seed %d), the run that broke it:\n", c.Invariant, c.Status, c.Seed)
		for _, line := range c.Trace {
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
	for _, p := range r.Saved {
		fmt.Fprintf(w, "saved %s\n", p)
	}
	fmt.Fprintln(w, "reproducible: the drawn schedules (same seed, same scenarios); not reproducible: the broker's timing, so each failure was re-run to confirm it.")
}

// listBrokers prints the brokers fuzzrun broker accepts.
func listBrokers(w io.Writer) {
	fmt.Fprintln(w, "\nbrokers (fuzzrun broker BROKER[:CONFIG]):")
	if ext.Registered == nil {
		fmt.Fprintf(w, "  nats, rabbitmq, kafka and their configurations: built with -tags %s (go run -tags %s ./cmd/fuzzrun list)\n", ext.Tag, ext.Tag)
		return
	}
	fmt.Fprintf(w, "  %s\n", strings.Join(ext.Registered.BrokerSpecs(), "\n  "))
}

// replayBroker re-runs a corpus/brokers case up to ConfirmRuns times and
// prints the history of the first run that breaks its invariant (or of
// the last run). Exit 1 when the invariant broke again, 0 when it did not.
func replayBroker(ctx context.Context, o *options, lc properties.LiveCampaign, stdout, stderr io.Writer) int {
	f := lc.Factory
	c, err := corpus.LoadBrokerCase(o.replay)
	if err != nil {
		return say(stderr, exitUsage, "-replay: %v", err)
	}
	if c.Broker != f.Name() {
		fmt.Fprintf(stderr, "fuzzrun: -replay: %s was found against %s; replaying it against %s\n", o.replay, c.Broker, f.Name())
	}
	h, broke, err := properties.ReplayLive(ctx, lc, c.Scenario, c.Invariant)
	if err != nil {
		return failed(stderr, "-replay: ", err, broker.ErrBrokerDown)
	}
	fmt.Fprintf(stdout, "%s against %s (at most %d runs on time):\n", o.replay, f.Name(), properties.ConfirmRuns)
	for _, line := range h.Trace() {
		fmt.Fprintf(stdout, "  %s\n", line)
	}
	switch {
	case broke == "" && h.Late != "":
		fmt.Fprintf(stdout, "%s: unconfirmed, no run kept its timing (the machine is loaded); try again\n", c.Invariant)
		return exitOK
	case broke == "":
		fmt.Fprintf(stdout, "%s held in every run on time\n", c.Invariant)
		return exitOK
	}
	fmt.Fprintf(stdout, "%s broke again: %s\nfix: %s\n", c.Invariant, broke, c.Fix)
	return exitViolation
}
