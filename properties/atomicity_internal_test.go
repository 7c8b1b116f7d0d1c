package properties

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// The atomicity monitor pairs a small store's entries and records by
// scanning, a big one's through maps: both say the same, in any order the
// store returns them.
func TestAtomicityScanAgreesWithMaps(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
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
		if scan, maps := m.unpaired(s, true), m.unpaired(s, false); !slices.Equal(scan, maps) {
			t.Fatalf("scan says %q, maps %q", scan, maps)
		}
	})
}
