package brokers_test

import (
	"context"
	"slices"
	"testing"

	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/impl/adapter/natsbroker"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/contract/event"
	"github.com/idemcheck/idemcheck/properties"
)

// memApp is an application under a live run, keeping its effects in
// memory (its "database", which survives its crashes): it credits each
// event it handles, skipping those it already credited when it dedupes.
type memApp struct{ dedupe bool }

func (a *memApp) Group(context.Context, string) (runner.LiveAppGroup, error) {
	return &memAppGroup{dedupe: a.dedupe, seen: map[string]bool{}}, nil
}

func (a *memApp) Close() error { return nil }

type memAppGroup struct {
	dedupe   bool
	seen     map[string]bool
	credited []string
}

func (g *memAppGroup) Handle(_ context.Context, m broker.Message) runner.LiveAppResult {
	ev, err := event.DecodeOrderPaid(m.Payload)
	switch {
	case err != nil:
		return runner.LiveAppResult{Kind: runner.AppPoison, Reason: "undecodable: " + err.Error()}
	case ev.AmountCents <= 0:
		return runner.LiveAppResult{Kind: runner.AppPoison, Reason: "amount must be positive"}
	case g.dedupe && g.seen[ev.EventID]:
		return runner.LiveAppResult{}
	}
	g.seen[ev.EventID] = true
	g.credited = append(g.credited, ev.EventID)
	return runner.LiveAppResult{}
}

func (g *memAppGroup) Crash() error { return nil }

func (g *memAppGroup) Credited(context.Context) ([]string, error) {
	return slices.Clone(g.credited), nil
}

// TestLiveAppOverNATS: an application given as a runner.LiveApp (as a
// team's consumer is) runs against a real broker. One that dedupes keeps
// every invariant over the advisory-DLQ configuration; one that does not
// is caught crediting a redelivered event twice.
func TestLiveAppOverNATS(t *testing.T) {
	f, err := natsbroker.New(natsbroker.AdvisoryDLQ)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, dedupe := range []bool{true, false} {
		app := func() (runner.LiveApp, error) { return &memApp{dedupe: dedupe}, nil }
		rep, err := properties.RunLiveCampaign(t.Context(), properties.LiveCampaign{Factory: f, App: app, Runs: 24, Seed: 1, Workers: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("dedupe %v: %d runs, %d late; coverage %v", dedupe, rep.Runs, rep.LateRuns, rep.Coverage)
		for _, c := range rep.Cells {
			switch {
			case dedupe && c.Status == properties.LiveFails:
				t.Errorf("the deduping application fails %s: %s\n%s", c.Invariant, c.Detail, c.Trace)
			case !dedupe && c.Invariant == properties.LiveSingleCredit && c.Status == properties.LiveUnconfirmed && rep.LateRuns > 0:
				t.Logf("single-credit broke only in late runs: unconfirmed on this loaded machine")
			case !dedupe && c.Invariant == properties.LiveSingleCredit && c.Status != properties.LiveFails:
				t.Errorf("the application without dedupe: single-credit %s, want a confirmed failure", c.Status)
			}
		}
	}
}
