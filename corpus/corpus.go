// Package corpus reads and writes the regression corpus: shrunk
// counterexamples saved as JSON files in the documented, versioned format of
// FORMAT.md (JSON Schema: schema.json). The files live in corpus/cases; go
// test replays each of them against the reference (which must pass) and
// against every mutant the file says it catches (which must fail), and other
// implementations replay them to prove they keep the same guarantees.
//
// The format itself — the Case type, its encoding, names, strict loading
// and atomic writes — is package corpus/casefile, which package
// consumertest shares; this package adds the check of a case's property,
// law and mutants against this repository's, and the replays.
package corpus

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/idemcheck/idemcheck/corpus/casefile"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/internal/law"
	"github.com/idemcheck/idemcheck/properties"
)

// Format is the value of every corpus file's "format" field (casefile.Format).
const Format = casefile.Format

// Version is the corpus format version written (casefile.Version).
const Version = casefile.Version

// ConsumerProperty is the Property of every consumer-level case.
const ConsumerProperty = casefile.ConsumerProperty

// Case is one corpus file: a scenario and what is known about it.
type Case = casefile.Case

// Encode renders c as indented JSON with a trailing newline (casefile.Encode).
func Encode(c *Case) ([]byte, error) { return casefile.Encode(c) }

// Hash returns a short content hash of the scenario's canonical encoding.
func Hash(s *scenario.Scenario) (string, error) { return casefile.Hash(s) }

// Name is the file name of a case: the property and the scenario's content
// hash.
func Name(property string, s *scenario.Scenario) (string, error) { return casefile.Name(property, s) }

// Write saves c in dir atomically, never overwriting (casefile.Write).
func Write(dir string, c *Case) (path string, created bool, err error) { return casefile.Write(dir, c) }

// Load reads and validates one corpus file, its names included: a renamed
// property or mutant is an error.
func Load(path string) (*Case, error) { return casefile.Load(path, checkNames) }

// Parse validates the contents of a corpus file; name prefixes every error.
func Parse(name string, data []byte) (*Case, error) { return casefile.Parse(name, data, checkNames) }

// LoadAny reads a corpus file or a bare scenario (casefile.LoadAny).
func LoadAny(path string) (*Case, error) { return casefile.LoadAny(path, checkNames) }

// LoadDir loads every corpus file (*.json, not hidden) in dir, in name
// order (casefile.LoadDir).
func LoadDir(dir string) ([]*Case, error) { return casefile.LoadDir(dir, checkNames) }

// checkNames holds the property and the caught mutants to what this harness
// knows, so that a renamed property or mutant is reported, not skipped. A
// law renamed since the file was written is read under its current name
// (the registry's aliases: nothing-lost/healthy-credited is
// nothing-lost/healthy-applied), so that old cases still load.
func checkNames(c *Case) error {
	kind := c.Scenario.Kind
	c.Property, c.Law = law.Canonical(c.Property), law.Canonical(c.Law)
	for m, id := range c.CaughtBy {
		c.CaughtBy[m] = law.Canonical(id)
	}
	if err := knownLaw("property", c.Property, kind); err != nil {
		return err
	}
	if c.Law != "" {
		if err := knownLaw("law", c.LawID(), kind); err != nil {
			return err
		}
	}
	for _, m := range slices.Sorted(maps.Keys(c.CaughtBy)) {
		t, ok := system.Lookup(m)
		if !ok || !t.Mutant {
			return fmt.Errorf("caughtBy.%s: %q is not a known mutant", m, m)
		}
		if c.Version >= 2 && !strings.Contains(c.CaughtBy[m], "/") {
			return fmt.Errorf("caughtBy.%s: %q names no law; version %d files write property/law", m, c.CaughtBy[m], c.Version)
		}
		if err := knownLaw("caughtBy."+m, c.CaughtBy[m], kind); err != nil {
			return err
		}
	}
	return nil
}

// knownLaw checks a property name, or a "property/law", against the
// properties of kind.
func knownLaw(field, id string, kind scenario.Kind) error {
	name, law, hasLaw := strings.Cut(id, "/")
	p, ok := properties.ByName(name)
	switch {
	case name == "":
		return fmt.Errorf("%s: missing or empty", field)
	case !ok:
		return fmt.Errorf("%s: %q is not a known property", field, name)
	case p.Kind != kind:
		return fmt.Errorf("%s: %q judges %s scenarios, but the scenario is %s", field, name, p.Kind, kind)
	case hasLaw && !p.HasLaw(law):
		return fmt.Errorf("%s: %q is not a law of %s", field, law, name)
	}
	return nil
}
