package linearizability

import (
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/impl/racystore"
)

func TestZZRate(t *testing.T) {
	for _, m := range racystore.Mutants() {
		caught := 0
		for seed := uint64(1); seed <= 20; seed++ {
			h := record(t, m.New, testConfig(seed))
			if Check(h, time.Minute).Verdict == Violation {
				caught++
			}
		}
		t.Logf("%s: %d/20", m.Name, caught)
	}
}
