package consumertest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// File is a saved consumer-level counterexample: the scenario, the law it
// broke against which consumer, and the trace, for a person.
type File struct {
	Format   string   `json:"format"`
	Kind     string   `json:"kind"`
	Consumer string   `json:"consumer"`
	Law      string   `json:"law"`
	Summary  string   `json:"summary,omitempty"`
	Seed     uint64   `json:"seed,omitempty"`
	Trace    []string `json:"trace,omitempty"`
	Scenario Scenario `json:"scenario"`
}

// SaveScenario writes s as a counterexample of law against consumer into
// dir, atomically, named <consumer>-<law>-<hash>.json, and returns the
// path. A file of that name is left as it is: it is the same
// counterexample.
func SaveScenario(dir, consumer, law string, s *Scenario, out *Outcome, seed uint64) (string, error) {
	f := File{Format: "idemcheck-consumer", Kind: "consumer", Consumer: consumer, Law: law, Seed: seed, Scenario: *s}
	if out != nil && out.Trace != nil {
		f.Trace = out.Trace.Lines()
	}
	js, err := s.Marshal()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(js)
	name := fmt.Sprintf("%s-%s-%s.json", consumer, law, hex.EncodeToString(sum[:])[:12])
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return "", err
	}
	data = append(data, '\n')
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	tmp, err := os.CreateTemp(dir, ".tmp-*.json")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	return path, os.Rename(tmp.Name(), path)
}

// LoadScenario reads a saved counterexample (or a bare scenario).
func LoadScenario(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var probe struct {
		Format   string          `json:"format"`
		Scenario json.RawMessage `json:"scenario"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if probe.Scenario != nil {
		data = probe.Scenario
	}
	s, err := UnmarshalScenario(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}
