package corpus

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/idemcheck/idemcheck/corpus/casefile"
	"github.com/idemcheck/idemcheck/faults/scenario"
)

// BrokersDir is where the counterexamples of real brokers live, one file
// per failing cell of the broker table in docs/brokers.md.
const BrokersDir = "corpus/brokers"

// BrokerCase is a counterexample found against a real broker: a live
// scenario whose schedule broke the invariant in a run and again in a
// re-run. Its timing is the broker's, so a replay re-runs it up to three
// times (properties.ConfirmRuns) rather than expecting the same trace.
type BrokerCase struct {
	// Broker is "broker:config", as fuzzrun broker names it.
	Broker string `json:"broker"`
	// Consumer names the team's consumer the case was found with
	// (fuzzrun broker -consumer), or is empty for the reference consumer.
	Consumer  string `json:"consumer,omitempty"`
	Invariant string `json:"invariant"`
	// Detail is what broke, as the judge said it.
	Detail string `json:"detail"`
	// Fix says in one line how to configure the broker so it holds.
	Fix      string         `json:"fix"`
	Seed     int            `json:"seed"`
	Scenario *scenario.Live `json:"scenario"`
}

// BrokerCaseName is the file name of a broker's cell: one file per
// (broker, configuration, invariant).
func BrokerCaseName(brokerSpec, invariant string) string {
	return strings.NewReplacer(":", "-", "/", "-").Replace(brokerSpec) + "-" + invariant + ".json"
}

// BrokerConsumersDir is where the counterexamples found with a team's
// consumer over a real broker live (fuzzrun broker NAME -consumer C): apart from
// the broker table's cells.
const BrokerConsumersDir = "corpus/brokers/consumers"

// caseName is c's file name: its cell's, with the consumer's name when a
// team's consumer found it.
func (c *BrokerCase) caseName() string {
	if c.Consumer == "" {
		return BrokerCaseName(c.Broker, c.Invariant)
	}
	return BrokerCaseName(c.Broker+"-"+c.Consumer, c.Invariant)
}

// WriteBrokerCase saves c in dir under BrokerCaseName, atomically (a
// temporary file, synced, then renamed over the old one: a cell's
// counterexample is replaced by a newer one, never left half-written).
func WriteBrokerCase(dir string, c *BrokerCase) (string, error) {
	if err := c.Scenario.Validate(); err != nil {
		return "", fmt.Errorf("corpus: broker case: %w", err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // fixes mention dlq.<topic>
	enc.SetIndent("", "  ")
	if err := enc.Encode(c); err != nil {
		return "", err
	}
	return casefile.WriteFile(dir, c.caseName(), buf.Bytes(), true)
}

// LoadBrokerCase reads and validates a broker case; unknown fields are
// errors.
func LoadBrokerCase(path string) (*BrokerCase, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c BrokerCase
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, casefile.JSONError(data, err))
	}
	if c.Scenario == nil {
		return nil, fmt.Errorf("%s: no scenario", path)
	}
	if err := c.Scenario.Validate(); err != nil {
		return nil, fmt.Errorf("%s: scenario.%w", path, err)
	}
	if c.Broker == "" || c.Invariant == "" || c.Fix == "" {
		return nil, fmt.Errorf("%s: broker, invariant and fix are required", path)
	}
	return &c, nil
}
