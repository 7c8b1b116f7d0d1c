package properties

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/impl/contract/projector"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/internal/hunt"
)

// The atomicity monitor pairs a small store's entries and records by
// scanning, a big one's through maps: both say the same, in any order the
// store returns them.
func TestAtomicityScanAgreesWithMaps(t *testing.T) {
	hunt.Check(t, func(t *rapid.T) {
		consumers, ids := []string{"ledger", "audit"}, []string{"e1", "e2", "e3"}
		var s snap
		for range rapid.IntRange(0, 8).Draw(t, "records") {
			s.Records = append(s.Records, store.Record{
				Key:   store.Key{Tenant: rapid.SampledFrom([]string{"", "acme"}).Draw(t, "tenant"), Consumer: rapid.SampledFrom(consumers).Draw(t, "consumer"), ID: rapid.SampledFrom(ids).Draw(t, "id")},
				State: rapid.SampledFrom([]store.State{store.Processing, store.Processed, store.Failed}).Draw(t, "state"),
			})
		}
		for range rapid.IntRange(0, 8).Draw(t, "entries") {
			s.Ledger = append(s.Ledger, store.Entry{Consumer: rapid.SampledFrom(consumers).Draw(t, "entryConsumer"), EventID: rapid.SampledFrom(ids).Draw(t, "entryID")})
		}
		m := &atomicityMonitor{legit: map[ledgerID]bool{}}
		if rapid.Bool().Draw(t, "legit") {
			m.legit[ledgerID{"ledger", "e1"}] = true
		}
		if scan, maps := m.unpaired(store.Conventions{}, 0, s, true), m.unpaired(store.Conventions{}, 0, s, false); !slices.Equal(scan, maps) {
			t.Fatalf("scan says %q, maps %q", scan, maps)
		}
	})
}

// The passing path of skew-safe-final-state reads a final state sorted by
// order id; one out of order or listing an order twice goes the slow way.
func TestEndsAsNeedsEachOrderOnce(t *testing.T) {
	want := map[string]string{"o1": "created", "o2": "paid"}
	st := func(id, status string) projector.OrderState {
		return projector.OrderState{OrderID: id, Status: projector.Status(status)}
	}
	for _, c := range []struct {
		final []projector.OrderState
		ends  bool
	}{
		{[]projector.OrderState{st("o1", "created"), st("o2", "paid")}, true},
		{[]projector.OrderState{st("o1", "created"), st("o1", "created")}, false},
		{[]projector.OrderState{st("o2", "paid"), st("o1", "created")}, false},
		{[]projector.OrderState{st("o1", "created"), st("o2", "cancelled")}, false},
		{[]projector.OrderState{st("o1", "created")}, false},
	} {
		if got := endsAs(runner.ProjectorRun{Final: c.final}, want); got != c.ends {
			t.Errorf("endsAs(%v) = %v, want %v", c.final, got, c.ends)
		}
	}
}
