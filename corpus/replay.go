package corpus

import (
	"fmt"

	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/properties"
)

// Judge plays s against target and judges the run by props; nil props means
// every property of the scenario's kind.
func Judge(s *scenario.Scenario, target system.Target, props []properties.Property) (*runner.Outcome, []properties.Verdict, error) {
	if props == nil {
		props = properties.ForKind(s.Kind)
	}
	out, err := runner.Run(s, target)
	if err != nil {
		return nil, nil, err
	}
	verdicts := make([]properties.Verdict, 0, len(props))
	for _, p := range props {
		if p.Kind == s.Kind {
			verdicts = append(verdicts, p.Check(out))
		}
	}
	return out, verdicts, nil
}

// Catches plays s against every mutant that takes part in scenarios of its
// kind and returns, for each mutant it catches, the property that fails:
// the mutant's own KilledBy property when that one fails, else the first
// failing property of the kind. It is what a new corpus file records as
// caughtBy, and what the replay test then holds the file to.
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
				first = v.Property
				break
			}
			if first == "" {
				first = v.Property
			}
		}
		if first != "" {
			out[m.Name] = first
		}
	}
	return out, nil
}

// HasKind reports whether target can play scenarios of kind k: a mutant of
// the consumption pipeline has no projection parts, and a store under test
// (system.WithStore) has only consumption parts.
func HasKind(t system.Target, k scenario.Kind) bool {
	switch k {
	case scenario.KindConsumption:
		return t.Consumption != nil
	case scenario.KindProjection:
		return t.Projection != nil
	}
	return false
}
