package main

import (
	"fmt"
	"strings"

	"github.com/idemcheck/idemcheck/impl/system"
)

// targetSource resolves target names of one family.
type targetSource struct {
	// names lists the names the source knows, for -list and error messages.
	names func() []string
	// lookup returns the named target, or false.
	lookup func(name string) (system.Target, bool)
}

// targetSources are consulted in order. To add a target — a store under
// test such as "sqlite" or "postgres" — append a source:
//
//	{names: func() []string { return []string{"sqlite"} },
//	 lookup: func(n string) (system.Target, bool) {
//		return system.WithStore("sqlite", sqlitestore.Open), n == "sqlite" }},
var targetSources = []targetSource{
	{ // the reference and every registered mutant
		names: func() []string {
			out := []string{"reference"}
			for _, m := range system.Mutants() {
				out = append(out, m.Name)
			}
			return out
		},
		lookup: system.Lookup,
	},
}

// lookupTarget resolves -target; an unknown name is a usage error listing
// the valid ones.
func lookupTarget(name string) (system.Target, error) {
	for _, s := range targetSources {
		if t, ok := s.lookup(name); ok {
			return t, nil
		}
	}
	return system.Target{}, usagef("-target: %q is not a target; valid targets: %s", name, strings.Join(targetNames(), ", "))
}

// targetNames lists every target name.
func targetNames() []string {
	var out []string
	for _, s := range targetSources {
		out = append(out, s.names()...)
	}
	return out
}

// describeTarget is one line about a target for -list.
func describeTarget(name string) string {
	t, err := lookupTarget(name)
	if err != nil {
		return name
	}
	switch {
	case t.Mutant:
		return fmt.Sprintf("%-34s mutant, killed by %s: %s", name, t.KilledBy, t.Bug)
	case name == "reference":
		return fmt.Sprintf("%-34s every part correct", name)
	}
	return name
}
