// Package scenario defines the Scenario: plain data that fully describes one
// run — the events, the workers and nodes, and an explicit schedule of steps.
// rapid draws it and shrinks it, the runner plays it, the corpus stores it,
// other implementations replay it and a failure report prints it. Nothing
// about a run may come from outside its Scenario.
//
// The JSON encoding is versioned (field "version"); see corpus/FORMAT.md.
package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Version is the current version of the JSON encoding.
const Version = 1

// Kind says which part of the system a scenario exercises.
type Kind string

const (
	// KindConsumption drives broker, producer gate, claim store, unit of work,
	// ledger and consumer workers (invariants 1–6 and 10).
	KindConsumption Kind = "consumption"
	// KindProjection drives skewed nodes, the HLC, the sequencer and the
	// projectors (invariants 7–9).
	KindProjection Kind = "projection"
)

// Scenario is one complete, replayable run. Exactly one of Consumption and
// Projection is set, matching Kind.
type Scenario struct {
	Version     int          `json:"version"`
	Kind        Kind         `json:"kind"`
	Consumption *Consumption `json:"consumption,omitempty"`
	Projection  *Projection  `json:"projection,omitempty"`
}

// Validate reports the first thing wrong with s, naming the field.
func (s *Scenario) Validate() error {
	if s.Version != Version {
		return fmt.Errorf("version: got %d, this harness reads version %d", s.Version, Version)
	}
	switch s.Kind {
	case KindConsumption:
		if s.Consumption == nil {
			return fmt.Errorf("consumption: missing for kind %q", s.Kind)
		}
		if s.Projection != nil {
			return fmt.Errorf("projection: must be absent for kind %q", s.Kind)
		}
		return s.Consumption.validate()
	case KindProjection:
		if s.Projection == nil {
			return fmt.Errorf("projection: missing for kind %q", s.Kind)
		}
		if s.Consumption != nil {
			return fmt.Errorf("consumption: must be absent for kind %q", s.Kind)
		}
		return s.Projection.validate()
	default:
		return fmt.Errorf("kind: %q is not one of %q, %q", s.Kind, KindConsumption, KindProjection)
	}
}

// Size is the number of steps plus the number of events: the measure a
// shrunk counterexample is reported by.
func (s *Scenario) Size() int {
	switch {
	case s.Consumption != nil:
		return len(s.Consumption.Steps) + len(s.Consumption.Events)
	case s.Projection != nil:
		return s.Projection.size()
	}
	return 0
}

// Marshal encodes s as indented JSON with a trailing newline. The encoding is
// canonical: the same Scenario always gives the same bytes.
func Marshal(s *Scenario) ([]byte, error) {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Unmarshal decodes and validates a scenario. Unknown fields are errors, so a
// typo in a hand-written scenario is reported rather than silently ignored.
func Unmarshal(data []byte) (*Scenario, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Scenario
	if err := dec.Decode(&s); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the scenario object")
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}
