// Package casefile is the corpus file format (corpus/FORMAT.md, JSON
// Schema corpus/schema.json) and nothing else: the Case type, its
// encoding, its file names, strict loading and atomic, never-overwriting
// writes. Every corpus file in the repository is read and written through
// it: package corpus (scenario cases, which it also checks against the
// known properties and mutants and replays) and package consumertest
// (consumer-level cases) both import it. It depends on the scenario
// encoding only, so a consumer harness links no property code.
package casefile

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/idemcheck/idemcheck/faults/scenario"
)

// Format is the value of every corpus file's "format" field: it tells a
// corpus file from a bare scenario and from any other JSON.
const Format = "idemcheck-corpus"

// Version is the version of the corpus file format this package writes. It
// reads this version and every earlier one (see FORMAT.md, "Versions"). The
// scenario inside carries its own version (scenario.Version).
const Version = 3

// Case is one corpus file: a scenario and what is known about it.
type Case struct {
	// Format is always Format.
	Format string `json:"format"`
	// Version is the corpus format version, Version.
	Version int `json:"version"`
	// Property is the property the scenario violated when it was found.
	Property string `json:"property"`
	// Law is the law of Property it broke (version 2; empty in a version 1
	// file, which named the property only).
	Law string `json:"law,omitempty"`
	// Target is the system the violation was found against: "reference", a
	// mutant's name, or another implementation's name.
	Target string `json:"target"`
	// Summary is the violated verdict's one-line summary, for a person.
	Summary string `json:"summary,omitempty"`
	// Schema, in a consumer-level case, is a fingerprint of the database
	// schema the consumer ran on when the case was found: a replay against
	// another schema says that the case no longer applies as saved.
	Schema string `json:"schema,omitempty"`
	// CaughtBy maps each mutant the scenario catches to the law that breaks
	// against it, "property/law" (a version 1 file names the property only).
	// The replay test holds the file to it.
	CaughtBy map[string]string `json:"caughtBy,omitempty"`
	// Seed is the rapid seed of the failing check before shrinking. It is
	// informative: the scenario, not the seed, is the reproduction.
	Seed uint64 `json:"seed,omitempty"`
	// Trace is the human trace of the scenario against Target, a line per entry.
	Trace []string `json:"trace,omitempty"`
	// Scenario is the shrunk scenario, in its own versioned encoding.
	// A consumer-level case (version 3) has Consumer instead.
	Scenario *scenario.Scenario `json:"scenario,omitempty"`
	// Consumer is the shrunk consumer-level scenario of a team's consumer
	// (package consumertest, which decodes and validates it), kept raw:
	// Property is then ConsumerProperty, Law a consumertest law and
	// Target the consumer's name. Version 3.
	Consumer json.RawMessage `json:"consumer,omitempty"`

	// Path is the file the case was loaded from or written to; not encoded.
	Path string `json:"-"`
	// Bare is true when the file held a bare scenario rather than a case
	// (see LoadAny); only Scenario and Path are then set.
	Bare bool `json:"-"`
}

// ConsumerProperty is the Property of every consumer-level case.
const ConsumerProperty = "consumer"

// IsConsumer reports whether c is a consumer-level case.
func (c *Case) IsConsumer() bool { return c.Consumer != nil }

// LawID is the law the case breaks as "property/law", or the property alone
// for a version 1 case that did not record its law.
func (c *Case) LawID() string {
	if c.Law == "" {
		return c.Property
	}
	return c.Property + "/" + c.Law
}

// Encode renders c as indented JSON with a trailing newline. It is
// deterministic: maps are written with sorted keys, so the same case always
// gives the same bytes.
func Encode(c *Case) ([]byte, error) {
	if (c.Scenario == nil) == (c.Consumer == nil) {
		return nil, fmt.Errorf("corpus: a case holds a scenario or a consumer scenario, one of them")
	}
	out := *c
	out.Format, out.Version = Format, Version
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // traces read "->", not "-\u003e"
	enc.SetIndent("", "  ")
	if err := enc.Encode(&out); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Hash returns a short content hash of the scenario's canonical encoding
// (scenario.Marshal): two cases with the same scenario have the same hash.
func Hash(s *scenario.Scenario) (string, error) {
	b, err := scenario.Marshal(s)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:12], nil
}

// Name is the file name of a case: the property and the scenario's content
// hash, so that the same counterexample found twice maps to the same file
// and is recognised as already known.
func Name(property string, s *scenario.Scenario) (string, error) {
	h, err := Hash(s)
	if err != nil {
		return "", err
	}
	return safeName(property) + "-" + h + ".json", nil
}

// safeName keeps a property name usable as a file name on every system.
func safeName(s string) string {
	if s == "" {
		return "unknown"
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '_'
	}, s)
}
