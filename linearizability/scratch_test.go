package linearizability

import (
	"context"
	"testing"

	"github.com/idemcheck/idemcheck/impl/clock"
	"github.com/idemcheck/idemcheck/impl/memstore"
	"github.com/idemcheck/idemcheck/impl/racystore"
	"github.com/idemcheck/idemcheck/impl/store"
)

func TestScratch(t *testing.T) {
	stores := map[string]func(clock.Source) store.Store{"ref": func(c clock.Source) store.Store { return memstore.New(c) }}
	for _, m := range racystore.Mutants() {
		stores[m.Name] = m.New
	}
	for name, ns := range stores {
		for seed := uint64(1); seed <= 3; seed++ {
			cfg := DefaultConfig()
			cfg.Seed = seed
			h, err := Record(context.Background(), ns, cfg)
			if err != nil {
				t.Fatal(err)
			}
			r := Check(h, 10e9)
			t.Logf("%s seed %d: %s %v %+v", name, seed, r, r.Elapsed, h.Stats())
			if seed == 1 && len(r.Explanations) > 0 {
				t.Logf("  %s", r.Explanations[0])
			}
		}
	}
}
