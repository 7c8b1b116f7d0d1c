package situation_test

import (
	"regexp"
	"testing"

	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/internal/situation"
)

var kebab = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// Every situation is kebab-case, described once, and named once per kind.
func TestRegistryNamesAreKebabAndUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range situation.All() {
		if !kebab.MatchString(s.Name) {
			t.Errorf("situation %q is not kebab-case", s.Name)
		}
		if s.Doc == "" {
			t.Errorf("situation %q has no description", s.Name)
		}
		k := string(s.Kind) + "/" + s.Name
		if seen[k] {
			t.Errorf("situation %s is registered twice", k)
		}
		seen[k] = true
	}
	if len(situation.Required(situation.KindConsumer)) == 0 || len(situation.Runner()) == 0 {
		t.Fatal("the registry has no consumer or no runner situations")
	}
}

// Every outcome of a live delivery has its delivery and redelivery
// situations registered, under the live kind.
func TestLiveOutcomesAreRegistered(t *testing.T) {
	for _, o := range []runner.LiveOutcome{runner.LiveAcked, runner.LiveNacked, runner.LiveDeadLetter, runner.LiveCrashed,
		runner.LiveStalled, runner.LiveDropped, runner.LiveAckFailed} {
		for _, name := range []string{situation.LiveDelivery(string(o)), situation.LiveRedeliveryAfter(string(o))} {
			if _, ok := situation.Lookup(scenario.KindLive, name); !ok {
				t.Errorf("live situation %q is not registered", name)
			}
		}
	}
}
