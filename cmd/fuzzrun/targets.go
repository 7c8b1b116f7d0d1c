package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/impl/system/resolve"
)

// builtinNames lists the reference and every registered mutant.
func builtinNames() []string {
	out := []string{"reference"}
	for _, m := range system.Mutants() {
		out = append(out, m.Name)
	}
	return out
}

// isExternal reports whether name is a store under test that Resolve opens
// (sqlite, sqlite-file, postgres, redis, exec:COMMAND) or an HLC or
// projector in a process (exec-hlc:COMMAND, exec-projector:COMMAND).
func isExternal(name string) bool {
	for _, prefix := range []string{"exec:", "exec-hlc:", "exec-projector:"} {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	for _, e := range resolve.ExternalTargets() {
		if e.Spec == name {
			return true
		}
	}
	return false
}

// lookupTarget resolves -target. An unknown name is a usage error listing
// the valid ones; an external target that cannot be opened (an unset DSN,
// an unreachable server, an adapter that does not start) is one too, with
// the reason.
func lookupTarget(name string) (system.Target, error) {
	if t, ok := system.Lookup(name); ok {
		return t, nil
	}
	if isExternal(name) {
		t, err := resolve.Resolve(name)
		if err != nil {
			return system.Target{}, usagef("-target: %q cannot be used: %v", name, err)
		}
		return t, nil
	}
	return system.Target{}, usagef("-target: %q is not a target; valid targets: %s", name, strings.Join(targetNames(), ", "))
}

// targetNames lists every target name (exec:COMMAND as its pattern).
func targetNames() []string {
	out := builtinNames()
	for _, e := range resolve.ExternalTargets() {
		out = append(out, e.Spec)
	}
	return out
}

// describeTarget is one line about a target for -list. External targets
// are described, not opened.
func describeTarget(name string) string {
	if i := slices.IndexFunc(resolve.ExternalTargets(), func(e resolve.ExternalTarget) bool { return e.Spec == name }); i >= 0 {
		return fmt.Sprintf("%-34s %s", name, resolve.ExternalTargets()[i].Doc)
	}
	t, ok := system.Lookup(name)
	switch {
	case !ok:
		return name
	case t.Mutant:
		return fmt.Sprintf("%-34s mutant, killed by %s: %s", name, t.KilledBy, t.Bug)
	}
	return fmt.Sprintf("%-34s every part correct", name)
}
