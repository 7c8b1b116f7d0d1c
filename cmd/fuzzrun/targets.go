package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/idemcheck/idemcheck/cmd/fuzzrun/internal/ext"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/impl/system/procresolve"
)

// builtinNames lists the reference and every registered mutant.
func builtinNames() []string {
	out := []string{"reference"}
	for _, m := range system.Mutants() {
		out = append(out, m.Name)
	}
	return out
}

// isExternal reports whether name is a store under test outside the
// process's memory (sqlite, sqlite-file, postgres, redis, exec:COMMAND) or
// an HLC or projector in a process (exec-hlc:COMMAND,
// exec-projector:COMMAND).
func isExternal(name string) bool {
	return procresolve.Handles(name) || slices.Contains(ext.ServerTargets, name)
}

// lookupTarget resolves -target. An unknown name is a usage error listing
// the valid ones; an external target that cannot be opened (an unset DSN,
// an unreachable server, an adapter that does not start) is one too, with
// the reason; a target over a real server in a build without them says
// how to build it.
func lookupTarget(name string) (system.Target, error) {
	if t, ok := system.Lookup(name); ok {
		return t, nil
	}
	var (
		t   system.Target
		err error
	)
	switch {
	case procresolve.Handles(name):
		t, err = procresolve.Resolve(name)
	case slices.Contains(ext.ServerTargets, name) && ext.Registered == nil:
		return system.Target{}, &tagError{what: "-target " + name, tag: ext.Tag}
	case slices.Contains(ext.ServerTargets, name):
		t, err = ext.Registered.Resolve(name)
	default:
		return system.Target{}, usagef("-target: %q is not a target; valid targets: %s", name, strings.Join(targetNames(), ", "))
	}
	if err != nil {
		return system.Target{}, usagef("-target: %q cannot be used: %v", name, err)
	}
	return t, nil
}

// externalTargets describes the targets beyond the built-in ones: those
// over real servers (their description says which build has them), then
// those over a process.
func externalTargets() []ext.Target {
	var out []ext.Target
	if ext.Registered != nil {
		out = append(out, ext.Registered.Targets...)
	} else {
		for _, n := range ext.ServerTargets {
			out = append(out, ext.Target{Spec: n, Doc: "built with -tags " + ext.Tag})
		}
	}
	for _, t := range procresolve.Targets() {
		out = append(out, ext.Target{Spec: t[0], Doc: t[1]})
	}
	return out
}

// targetNames lists every target name (exec:COMMAND as its pattern).
func targetNames() []string {
	out := builtinNames()
	for _, e := range externalTargets() {
		out = append(out, e.Spec)
	}
	return out
}

// describeTarget is one line about a target for fuzzrun list. External
// targets are described, not opened.
func describeTarget(name string) string {
	ts := externalTargets()
	if i := slices.IndexFunc(ts, func(e ext.Target) bool { return e.Spec == name }); i >= 0 {
		return fmt.Sprintf("%-34s %s", name, ts[i].Doc)
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
