// Package resolve opens the targets a command line names, including those
// over real systems (SQLite, PostgreSQL, Redis, a process adapter). It is
// the only place that links the database drivers: impl/system, faults/ and
// properties/ import none, so code that imports the checks does not pull in
// every driver.
package resolve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/idemcheck/idemcheck/impl/adapter/pgstore"
	"github.com/idemcheck/idemcheck/impl/adapter/redisstore"
	"github.com/idemcheck/idemcheck/impl/adapter/sqlitestore"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/impl/system/procresolve"
)

// Environment variables Resolve reads.
const (
	// PostgresDSNEnv holds the PostgreSQL connection string of "postgres".
	PostgresDSNEnv = pgstore.DSNEnv
	// RedisAddrEnv holds the Redis address of "redis" (default
	// redisstore.DefaultAddr).
	RedisAddrEnv = "IDEMCHECK_REDIS_ADDR"
	// ExecTimeoutEnv holds the per-request timeout of "exec:" adapters, as
	// a Go duration ("5s"); default procstore.DefaultTimeout.
	ExecTimeoutEnv = procresolve.ExecTimeoutEnv
)

// openTimeout bounds opening one run's store, so an unreachable database
// is an error and not a hang.
const openTimeout = procresolve.OpenTimeout

// Resolve returns the target a command line names:
//
//	reference, or a mutant's name      the built-in targets (system.Lookup)
//	sqlite                             the reference consumer over SQLite, a fresh in-memory database per run
//	sqlite-file                        the same over a fresh temporary database file per run
//	postgres                           over PostgreSQL at $IDEMCHECK_POSTGRES_DSN, a fresh schema per run
//	redis                              over Redis at $IDEMCHECK_REDIS_ADDR (default 127.0.0.1:6379), a fresh key prefix per run
//	exec:COMMAND                       over a process adapter (impl/adapter/procstore), a fresh state file per run
//	exec-hlc:COMMAND                   the reference projection over an HLC in a process (impl/adapter/procparts)
//	exec-projector:COMMAND             the reference projection with a projector in a process (impl/adapter/procparts)
//
// Each run gets an empty store, and the runner's Close drops what the run
// left (schema, key prefix, files). Resolve opens and closes one store of
// the external targets first, so a missing database or a broken adapter is
// reported here, once, rather than by every run. An exec-hlc: or
// exec-projector: target starts its process here and keeps it for every
// run (each run opens fresh clocks or projectors in it); Resolve opens one
// clock or projector first, so an implementation that does not speak the
// protocol, or declares a bad option, is reported here.
func Resolve(spec string) (system.Target, error) {
	if t, ok := system.Lookup(spec); ok {
		return t, nil
	}
	if procresolve.Handles(spec) {
		return procresolve.Resolve(spec)
	}
	var open func(clock.Source) (store.Store, error)
	switch {
	case spec == "sqlite":
		return system.WithStore(spec, openSQLiteMemory), nil
	case spec == "sqlite-file":
		open = openSQLiteFile
	case spec == "postgres":
		dsn := os.Getenv(PostgresDSNEnv)
		if dsn == "" {
			return system.Target{}, fmt.Errorf("target postgres: %s is unset; set it to a PostgreSQL connection string, e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable", PostgresDSNEnv)
		}
		open = func(c clock.Source) (store.Store, error) { return openPostgres(dsn, c) }
	case spec == "redis":
		addr := cmpOr(os.Getenv(RedisAddrEnv), redisstore.DefaultAddr)
		open = func(c clock.Source) (store.Store, error) {
			ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
			defer cancel()
			return redisstore.Open(ctx, addr, c)
		}
	default:
		return system.Target{}, fmt.Errorf("unknown target %q: want reference, a mutant's name, sqlite, sqlite-file, postgres, redis, exec:COMMAND, exec-hlc:COMMAND or exec-projector:COMMAND", spec)
	}
	if err := procresolve.Probe(open); err != nil {
		return system.Target{}, fmt.Errorf("target %s: %w", spec, err)
	}
	return system.WithStore(spec, open), nil
}

// ExternalTarget describes one kind of target Resolve builds over a store
// outside the process's memory.
type ExternalTarget struct {
	// Spec is what Resolve accepts ("exec:COMMAND" stands for any command).
	Spec string
	// Doc says what it runs against, in one line.
	Doc string
}

// ExternalTargets lists the targets Resolve knows beyond Lookup's, for a
// command's help and -list.
func ExternalTargets() []ExternalTarget {
	out := []ExternalTarget{
		{"sqlite", "the reference consumer over SQLite, a fresh in-memory database per run"},
		{"sqlite-file", "the reference consumer over SQLite, a fresh temporary database file per run"},
		{"postgres", "the reference consumer over PostgreSQL at $" + PostgresDSNEnv + ", a fresh schema per run"},
		{"redis", "the reference consumer over Redis (set-if-absent, then effect) at $" + RedisAddrEnv + ", a fresh key prefix per run"},
	}
	for _, t := range procresolve.Targets() {
		out = append(out, ExternalTarget{Spec: t[0], Doc: t[1]})
	}
	return out
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// openSQLiteMemory opens a fresh in-memory database: it has a name of its
// own and disappears with the store's last connection at Close.
func openSQLiteMemory(c clock.Source) (store.Store, error) {
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	return sqlitestore.Open(ctx, sqlitestore.Options{Clock: c})
}

// fileStore is a store in a temporary directory that Close removes.
type fileStore struct {
	*sqlitestore.Store
	dir string
}

// Close implements store.Closer.
func (s fileStore) Close() error {
	return errors.Join(s.Store.Close(), os.RemoveAll(s.dir))
}

func openSQLiteFile(c clock.Source) (store.Store, error) {
	dir, err := os.MkdirTemp("", "idemcheck-sqlite-")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	s, err := sqlitestore.Open(ctx, sqlitestore.Options{Path: filepath.Join(dir, "store.db"), Clock: c})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return fileStore{Store: s, dir: dir}, nil
}

// pgRunStore is a store in a schema of its own that Close drops.
type pgRunStore struct{ *pgstore.Store }

// Close implements store.Closer: the connections, then the run's schema.
func (s pgRunStore) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	return errors.Join(s.Store.Close(), s.DropSchema(ctx))
}

func openPostgres(dsn string, c clock.Source) (store.Store, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	// Random, because runs of several processes share one database; the
	// schema's name appears in no trace.
	schema := "run_" + hex.EncodeToString(b)
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	s, err := pgstore.Open(ctx, pgstore.Options{DSN: dsn, Schema: schema, Clock: c})
	if err != nil {
		// Nothing to drop: the schema is created in one transaction.
		return nil, err
	}
	return pgRunStore{s}, nil
}
