package corpus

import (
	"fmt"

	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/properties"
)

// Judge plays s against target and judges the run by props; nil props means
// every property of the scenario's kind. It is properties.Judge.
func Judge(s *scenario.Scenario, target system.Target, props []properties.Property) (*runner.Outcome, []properties.Verdict, error) {
	return properties.Judge(s, target, props)
}

// Catches plays s against every mutant that takes part in scenarios of its
// kind and returns, for each mutant it catches, the law that breaks as
// "property/law": the first broken law of the mutant's own KilledBy
// property when that one fails, else the first broken law of the kind. It
// is what a new corpus file records as caughtBy, and what the replay test
// then holds the file to.
func Catches(s *scenario.Scenario) (map[string]string, error) {
	out := map[string]string{}
	for _, m := range system.Mutants() {
		if !HasKind(m, s.Kind) {
			continue
		}
		_, verdicts, err := Judge(s, m, nil)
		if err != nil {
			return nil, fmt.Errorf("corpus: play against %s: %w", m.Name, err)
		}
		first := ""
		for _, v := range verdicts {
			if v.Pass {
				continue
			}
			if v.Property == m.KilledBy {
				first = properties.ID(v.Property, v.Law)
				break
			}
			if first == "" {
				first = properties.ID(v.Property, v.Law)
			}
		}
		if first != "" {
			out[m.Name] = first
		}
	}
	return out, nil
}

// HasKind reports whether target can play scenarios of kind k
// (properties.Plays).
func HasKind(t system.Target, k scenario.Kind) bool { return properties.Plays(t, k) }
