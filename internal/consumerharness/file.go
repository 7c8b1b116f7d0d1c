package consumerharness

import (
	"fmt"

	"github.com/idemcheck/idemcheck/corpus/casefile"
)

// SaveScenario writes s as a counterexample of law (summary: its one line)
// against consumer into dir, atomically, named
// <consumer>-<law>-<hash>.json (casefile.Write), and returns the path. A
// file holding the same scenario is left as it is, and its path returned:
// it is the same counterexample.
func SaveScenario(dir, consumer, law, summary string, s *Scenario, out *Outcome, seed uint64) (string, error) {
	js, err := s.Marshal()
	if err != nil {
		return "", err
	}
	c := &casefile.Case{Property: casefile.ConsumerProperty, Law: law, Target: displayOr(consumer), Summary: summary, Seed: seed, Consumer: js}
	if out != nil && out.Trace != nil {
		c.Trace = out.Trace.Lines()
	}
	if out != nil {
		c.Schema = out.schemaPrint
	}
	path, _, err := casefile.Write(dir, c)
	return path, err
}

// displayOr names a consumer with no name.
func displayOr(name string) string {
	if name == "" {
		return "consumer"
	}
	return name
}

// LoadScenario reads a saved counterexample (a corpus file holding a
// consumer-level case, held to the corpus format) or a bare consumer
// scenario.
func LoadScenario(path string) (*Scenario, error) {
	data, err := casefile.LoadConsumer(path)
	if err != nil {
		return nil, err
	}
	s, err := UnmarshalScenario(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}
