package hunt_test

import (
	"sync"
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/examples/consumers/catalog"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/internal/hunt"
	"github.com/idemcheck/idemcheck/properties"
	"pgregory.net/rapid"
)

// A property hunt, a consumer hunt and a plain check run at once, each
// through its own package's entry point: each sets or reads rapid's
// process-wide flags, and the one guard keeps them apart (go test -race
// fails here otherwise), and each hunt plays the check count it asked for.
func TestConcurrentHuntsShareTheGuard(t *testing.T) {
	adr, ok := catalog.Lookup("adr")
	if !ok {
		t.Fatal("the catalog has no adr consumer")
	}
	var wg sync.WaitGroup
	var prop properties.HuntResult
	var cons consumertest.Result
	var consErr error
	plain := 0
	wg.Add(3)
	go func() {
		defer wg.Done()
		prop = properties.Hunt(system.Reference(), properties.HuntOptions{Kind: scenario.KindConsumption, Checks: 7, Seed: 1})
	}()
	go func() {
		defer wg.Done()
		cons, consErr = consumertest.Hunt(adr.On("sqlite"), consumertest.Checks(5), consumertest.Seed(2))
	}()
	go func() {
		defer wg.Done()
		rec := hunt.NewRecorder("plain")
		hunt.Check(rec, func(rt *rapid.T) {
			rapid.IntRange(0, 3).Draw(rt, "n")
			plain++
		})
	}()
	wg.Wait()
	if prop.Failed || prop.Checks != 7 {
		t.Errorf("property hunt of the reference: failed %v after %d checks, want a pass after 7:\n%s", prop.Failed, prop.Checks, prop.Message)
	}
	if consErr != nil {
		t.Fatal(consErr)
	}
	if cons.Failed || cons.Checks != 5 {
		t.Errorf("consumer hunt of adr: failed %v after %d checks, want a pass after 5", cons.Failed, cons.Checks)
	}
	if plain == 0 {
		t.Error("the plain check played nothing")
	}
}
