package consumertest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// File is a saved consumer-level counterexample, in the corpus format
// (corpus/FORMAT.md, version 3, a consumer-level case): the scenario, the
// law it broke against which consumer, and the trace, for a person.
type File struct {
	Format   string    `json:"format"`
	Version  int       `json:"version"`
	Property string    `json:"property"`
	Law      string    `json:"law"`
	Target   string    `json:"target"`
	Summary  string    `json:"summary,omitempty"`
	Seed     uint64    `json:"seed,omitempty"`
	Trace    []string  `json:"trace,omitempty"`
	Consumer *Scenario `json:"consumer"`
}

// The corpus format's constants this package writes (see package corpus).
const (
	corpusFormat   = "idemcheck-corpus"
	corpusVersion  = 3
	corpusProperty = "consumer"
)

// SaveScenario writes s as a counterexample of law (summary: its one line)
// against consumer into
// dir, atomically, named <consumer>-<law>-<hash>.json, and returns the
// path. A file of that name is left as it is: it is the same
// counterexample.
func SaveScenario(dir, consumer, law, summary string, s *Scenario, out *Outcome, seed uint64) (string, error) {
	f := File{Format: corpusFormat, Version: corpusVersion, Property: corpusProperty, Law: law, Target: consumer, Summary: summary, Seed: seed, Consumer: s}
	if out != nil && out.Trace != nil {
		f.Trace = out.Trace.Lines()
	}
	js, err := s.Marshal()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(js)
	name := fmt.Sprintf("%s-%s-%s.json", safeName(consumer), law, hex.EncodeToString(sum[:])[:12])
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

// safeName keeps a consumer's name usable as a file name.
func safeName(s string) string {
	if s == "" {
		return "consumer"
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r - 'A' + 'a'
		}
		return '-'
	}, s)
}

// LoadScenario reads a saved counterexample (a corpus file holding a
// consumer-level case) or a bare consumer scenario.
func LoadScenario(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var probe struct {
		Format   string          `json:"format"`
		Consumer json.RawMessage `json:"consumer"`
		Scenario json.RawMessage `json:"scenario"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	switch {
	case probe.Format != "" && probe.Consumer == nil:
		return nil, fmt.Errorf("%s: a corpus file, but not a consumer-level case (no \"consumer\" field)", path)
	case probe.Consumer != nil:
		data = probe.Consumer
	}
	s, err := UnmarshalScenario(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}
