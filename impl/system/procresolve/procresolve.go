// Package procresolve opens the targets a command line names over
// implementations in a process (exec:COMMAND, exec-hlc:COMMAND,
// exec-projector:COMMAND). It links no database driver, so a command that
// needs only these and the built-in targets builds fast; package resolve
// opens these too, and the targets over real systems besides.
package procresolve

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/impl/adapter/procparts"
	"github.com/idemcheck/idemcheck/impl/adapter/procstore"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/system"
)

// ExecTimeoutEnv holds the per-request timeout of "exec:" adapters, as a Go
// duration ("5s"); default procstore.DefaultTimeout.
const ExecTimeoutEnv = "IDEMCHECK_EXEC_TIMEOUT"

// OpenTimeout bounds opening one run's store, so an unreachable database or
// a process that does not answer is an error and not a hang.
const OpenTimeout = 30 * time.Second

// Prefixes are the spec prefixes Resolve handles.
var Prefixes = []string{"exec:", "exec-hlc:", "exec-projector:"}

// Handles reports whether spec is a target Resolve opens.
func Handles(spec string) bool {
	for _, p := range Prefixes {
		if strings.HasPrefix(spec, p) {
			return true
		}
	}
	return false
}

// Resolve opens the target spec names, one of exec:COMMAND (the reference
// consumer over a process adapter, impl/adapter/procstore, a fresh state
// file per run), exec-hlc:COMMAND (the reference projection over an HLC in
// a process, impl/adapter/procparts) or exec-projector:COMMAND (the
// reference projection with a projector in a process). It opens and closes
// one store, clock or projector first, so an implementation that does not
// start or speak the protocol is reported here, once.
func Resolve(spec string) (system.Target, error) {
	var (
		t   system.Target
		err error
	)
	switch {
	case strings.HasPrefix(spec, "exec-hlc:"):
		t, err = resolveHLC(spec, strings.TrimPrefix(spec, "exec-hlc:"))
	case strings.HasPrefix(spec, "exec-projector:"):
		t, err = resolveProjector(spec, strings.TrimPrefix(spec, "exec-projector:"))
	case strings.HasPrefix(spec, "exec:"):
		t, err = resolveStore(spec, strings.TrimPrefix(spec, "exec:"))
	default:
		return system.Target{}, fmt.Errorf("unknown target %q: want exec:COMMAND, exec-hlc:COMMAND or exec-projector:COMMAND", spec)
	}
	if err != nil {
		return system.Target{}, fmt.Errorf("target %s: %w", spec, err)
	}
	return t, nil
}

// Targets describes the targets Resolve opens, as Spec and Doc pairs.
func Targets() [][2]string {
	return [][2]string{
		{"exec:COMMAND", "the reference consumer over a process adapter speaking impl/adapter/procstore/PROTOCOL.md"},
		{"exec-hlc:COMMAND", "the reference projection over an HLC in a process speaking impl/adapter/procparts/PROTOCOL.md"},
		{"exec-projector:COMMAND", "the reference projection with a projector in a process speaking impl/adapter/procparts/PROTOCOL.md"},
	}
}

// Probe opens and closes one store.
func Probe(open func(clock.Source) (store.Store, error)) error {
	s, err := open(clock.NewVirtual(0))
	if err != nil {
		return err
	}
	if c, ok := s.(store.Closer); ok {
		return c.Close()
	}
	return nil
}

func resolveStore(spec, command string) (system.Target, error) {
	opts, err := execOptions(command)
	if err != nil {
		return system.Target{}, err
	}
	open := func(c clock.Source) (store.Store, error) {
		return procstore.Open(context.Background(), opts, c)
	}
	if err := Probe(open); err != nil {
		return system.Target{}, err
	}
	return system.WithStore(spec, open), nil
}

// execTimeout reads ExecTimeoutEnv: zero when unset.
func execTimeout() (time.Duration, error) {
	v := os.Getenv(ExecTimeoutEnv)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive Go duration such as 5s", ExecTimeoutEnv, v)
	}
	return d, nil
}

func partsOptions(command string) (procparts.Options, error) {
	argv, err := procparts.ParseCommand(command)
	if err != nil {
		return procparts.Options{}, err
	}
	d, err := execTimeout()
	if err != nil {
		return procparts.Options{}, err
	}
	return procparts.Options{Command: argv, Timeout: d}, nil
}

// resolveHLC starts an HLC implementation and opens one clock in it.
func resolveHLC(spec, command string) (system.Target, error) {
	opts, err := partsOptions(command)
	if err != nil {
		return system.Target{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), OpenTimeout)
	defer cancel()
	hs, err := procparts.OpenHLCs(ctx, opts)
	if err != nil {
		return system.Target{}, err
	}
	c, err := hs.Open("probe", clock.NewVirtual(0))
	if err != nil {
		_ = hs.Close()
		return system.Target{}, err
	}
	if err := c.(*procparts.Clock).Close(); err != nil {
		_ = hs.Close()
		return system.Target{}, err
	}
	return system.WithHLC(spec, hs.Open), nil
}

// resolveProjector starts a projector implementation and opens one
// projector in it.
func resolveProjector(spec, command string) (system.Target, error) {
	opts, err := partsOptions(command)
	if err != nil {
		return system.Target{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), OpenTimeout)
	defer cancel()
	ps, err := procparts.OpenProjectors(ctx, opts)
	if err != nil {
		return system.Target{}, err
	}
	p := ps.New().(*procparts.Projector)
	if err := errors.Join(p.Err(), p.Close()); err != nil {
		_ = ps.Close()
		return system.Target{}, err
	}
	return system.WithProjector(spec, ps.New), nil
}

func execOptions(command string) (procstore.Options, error) {
	argv, err := procstore.ParseCommand(command)
	if err != nil {
		return procstore.Options{}, err
	}
	d, err := execTimeout()
	if err != nil {
		return procstore.Options{}, err
	}
	return procstore.Options{Command: argv, Timeout: d}, nil
}
