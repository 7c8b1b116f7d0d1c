package conformance_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/system/resolve"
)

func TestResolveBuiltIn(t *testing.T) {
	for _, name := range []string{"reference", "no-dedup"} {
		tg, err := resolve.Resolve(name)
		if err != nil || tg.Name != name {
			t.Errorf("Resolve(%q) = %q, %v", name, tg.Name, err)
		}
	}
}

// TestResolveRefuses: a target that cannot work is refused by Resolve, with
// a message saying why, instead of failing every run.
func TestResolveRefuses(t *testing.T) {
	t.Setenv(resolve.RedisAddrEnv, "127.0.0.1:1")
	t.Setenv(resolve.ExecTimeoutEnv, "")
	for spec, says := range map[string]string{
		"bogus":                 "unknown target",
		"exec:":                 "empty command",
		"exec:   ":              "empty command",
		"exec:/nonexistent/cmd": "could not start",
		"exec:sh -c exit":       "exited with status 0",
		"redis":                 "cannot reach Redis",
	} {
		_, err := resolve.Resolve(spec)
		if err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("Resolve(%q): %v, want an error saying %q", spec, err, says)
		}
	}
	t.Setenv(resolve.ExecTimeoutEnv, "soon")
	if _, err := resolve.Resolve("exec:true"); err == nil || !strings.Contains(err.Error(), resolve.ExecTimeoutEnv) {
		t.Errorf("bad timeout: %v", err)
	}
}

// TestEveryRunStartsEmpty: each NewStore of a resolved target is a store
// of its own, empty, and its Close leaves nothing behind.
func TestEveryRunStartsEmpty(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		spec string
		need func(testing.TB) string
	}{
		{spec: "sqlite"},
		{spec: "sqlite-file"},
		{spec: "postgres", need: postgresDSN},
		{spec: "redis", need: redisAddr},
		{spec: "exec", need: nodeCommand},
	} {
		t.Run(c.spec, func(t *testing.T) {
			spec := c.spec
			if c.need != nil {
				if v := c.need(t); spec == "exec" {
					spec = "exec:" + v
				}
			}
			tg := openTarget(t, spec)
			key := store.Key{Consumer: "ledger", ID: "evt-1"}
			first, err := tg.Consumption.NewStore(clock.NewVirtual(1000))
			if err != nil {
				t.Fatal(err)
			}
			if c, err := first.Claim(ctx, key, 100); err != nil || c.Outcome != store.Acquired {
				t.Fatalf("claim: %+v %v", c, err)
			}
			second, err := tg.Consumption.NewStore(clock.NewVirtual(1000))
			if err != nil {
				t.Fatal(err)
			}
			if recs, err := second.Records(ctx); err != nil || len(recs) != 0 {
				t.Errorf("a second run's store holds %+v %v, want it empty", recs, err)
			}
			for _, s := range []store.Store{first, second} {
				if err := s.(store.Closer).Close(); err != nil {
					t.Errorf("close: %v", err)
				}
			}
			leftOver(t, first)
			if _, err := first.Records(ctx); err == nil && spec != "sqlite" {
				// The in-memory SQLite database is gone with its pool; the
				// others must refuse a closed store too.
				t.Errorf("a closed store still answers")
			}
		})
	}
}

// leftOver fails if a closed store left its schema or its state file
// behind. (The Redis store's keys are checked in impl/redisstore.)
func leftOver(t *testing.T, s store.Store) {
	t.Helper()
	ctx := context.Background()
	if sc, ok := s.(interface{ Schema() string }); ok {
		conn, err := pgx.Connect(ctx, os.Getenv(resolve.PostgresDSNEnv))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM information_schema.schemata WHERE schema_name = $1`, sc.Schema()).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("schema %s is still there after Close", sc.Schema())
		}
	}
	if sf, ok := s.(interface{ StateFile() string }); ok {
		if _, err := os.Stat(sf.StateFile()); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("state file %s after Close: %v", sf.StateFile(), err)
		}
	}
}

// redisAddr returns the Redis address, or skips.
func redisAddr(t testing.TB) string {
	t.Helper()
	a := os.Getenv(resolve.RedisAddrEnv)
	if a == "" {
		t.Skipf("%s is unset: skipping the Redis target (set it to host:port; .ci/run does)", resolve.RedisAddrEnv)
	}
	return a
}
