package consumertest

import (
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/consumertest/scenario"
	"github.com/idemcheck/idemcheck/faults/gen"
	"github.com/idemcheck/idemcheck/internal/consumerharness"
)

// The front door holds what a team calls from its tests, and nothing
// else: the names below are the harness's (package
// internal/consumerharness) under this path, aliases for its types and
// functions that call its own, so that a value of one is a value of the
// other. What a handler needs is in package consumertest/handler, the
// scenario vocabulary in consumertest/scenario, the laws in
// consumertest/laws; TestFrontDoorStaysSmall holds the count here.

// Consumer is a team's consumer as written: its schema, its handler (or a
// Worker that builds one per worker process), and the queries that read
// what it did (Effects, and Dedupe when it keeps dedupe records).
type Consumer = consumerharness.Consumer

// Effects is the effects query and its shape (PerEvent or Aggregate).
type Effects = consumerharness.Effects

// PerEvent reads effects as one row per applied event, the event id in
// the first column: the laws count how often each event was applied.
func PerEvent(query string) Effects { return consumerharness.PerEvent(query) }

// Aggregate reads effects as state: rows of (user id, total cents), for a
// consumer that keeps balances rather than a row per event.
func Aggregate(query string) Effects { return consumerharness.Aggregate(query) }

// Check puts the consumer under the harness from a test: it draws
// scenarios, plays each one, and fails t with the smallest counterexample
// it finds, saved to the corpus with the command that replays it.
func Check(t *testing.T, c Consumer, opts ...Option) {
	t.Helper()
	consumerharness.Check(t, c, opts...)
}

// Hunt is Check without a test: it searches for a scenario in which c
// breaks a law, shrinks and reduces it, and returns it. An error means c
// could not be run at all.
func Hunt(c Consumer, opts ...Option) (Result, error) { return consumerharness.Hunt(c, opts...) }

// Fuzz puts the consumer under Go's native, coverage-guided fuzzing
// (go test -fuzz): each input decodes into a scenario, and a failing one
// fails f's test with its reduced counterexample.
func Fuzz(f *testing.F, c Consumer, opts ...Option) {
	f.Helper()
	consumerharness.Fuzz(f, c, opts...)
}

// Replay plays one scenario against c and judges it: a saved
// counterexample (scenario.Load) or one the team wrote.
func Replay(c Consumer, s *scenario.Scenario, opts ...Option) (Result, error) {
	return consumerharness.Replay(c, s, opts...)
}

// Verify model-checks the consumer within the bounds from a test: it
// tries every schedule the bounds allow and fails t with the
// counterexample of fewest preemptions, or reports what was verified.
func Verify(t *testing.T, c Consumer, b Bounds, opts ...Option) {
	t.Helper()
	consumerharness.Verify(t, c, b, opts...)
}

// Explore is Verify without a test: it model-checks the consumer within
// the bounds and returns what the search found.
func Explore(c Consumer, b Bounds, opts ...Option) (VerifyResult, error) {
	return consumerharness.Explore(c, b, opts...)
}

// Result is what a Hunt or a Replay found.
type Result = consumerharness.Result

// VerifyResult is what a verification found.
type VerifyResult = consumerharness.VerifyResult

// Bounds bound a verification: the world (the events' fates, the
// workers, the broker's policy) and how many of each choice a schedule
// may make.
type Bounds = consumerharness.Bounds

// DefaultBounds cover every kind of fault at least once, in worlds small
// enough to search in seconds.
var DefaultBounds = consumerharness.DefaultBounds

// Option tunes a Check, Hunt, Replay, Fuzz, Verify or Explore.
type Option = consumerharness.Option

// Seed sets rapid's seed (default: -rapid.seed, or a random one that the
// failure report prints).
func Seed(seed uint64) Option { return consumerharness.Seed(seed) }

// Checks sets how many scenarios are drawn (default: rapid's
// -rapid.checks, 100).
func Checks(n int) Option { return consumerharness.Checks(n) }

// MaxSteps bounds the explicit schedule of a drawn scenario (default 16).
func MaxSteps(n int) Option { return consumerharness.MaxSteps(n) }

// Faults weighs the kinds of step Check and Hunt draw a scenario's
// schedule from, with the reference world's weights type (gen.Weights of
// package faults/gen) and the kinds of the consumer's world: run, fail,
// crash, advance, duplicate, replay. A kind of weight 0 is never drawn, a
// kind left out keeps its default; without Faults a seed draws the
// scenario it always drew.
//
//	consumertest.Check(t, c, consumertest.Faults(gen.Weights{gen.KindCrash: 6, gen.KindReplay: 0}))
func Faults(w gen.Weights) Option { return consumerharness.Faults(w) }

// CorpusDir is where a counterexample is saved. Check saves into
// testdata/consumertest by default; Hunt saves only when this is given.
func CorpusDir(dir string) Option { return consumerharness.CorpusDir(dir) }

// Postgres plays every scenario on PostgreSQL at dsn (a pgx connection
// string), each in a database of its own; see PostgresEnv.
func Postgres(dsn string) Option { return consumerharness.Postgres(dsn) }

// MySQL plays every scenario on MySQL or MariaDB at dsn (a
// go-sql-driver/mysql DSN such as root@tcp(127.0.0.1:3306)/test), each run
// in databases of its own; conventionally the DSN is in
// $IDEMCHECK_MYSQL_DSN. Lock waits are scheduling points and the
// session's timestamp follows the scenario's clock; see "MySQL and
// MariaDB" in docs/consumers.md.
func MySQL(dsn string) Option { return consumerharness.MySQL(dsn) }

// SQLite declares the settings the team runs SQLite with, as the query
// parameters of its modernc.org/sqlite DSN, e.g.
// "_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)&_txlock=immediate".
// Without it, the defaults are SQLite's and the driver's.
func SQLite(params string) Option { return consumerharness.SQLite(params) }

// NoReduce skips the reduction pass that follows rapid's shrinking.
func NoReduce() Option { return consumerharness.NoReduce() }

// ShrinkTime bounds rapid's shrinking of a counterexample (default 2s).
func ShrinkTime(d time.Duration) Option { return consumerharness.ShrinkTime(d) }

// VerifyOptions gather how Verify and Explore search, besides their
// Bounds: a time or schedule budget, the goroutines searching at once, a
// context that stops the search, a progress callback, and the two
// reductions a team may switch off. A zero field keeps the default.
type VerifyOptions = consumerharness.VerifyOptions

// VerifyWith sets how Verify and Explore search:
//
//	consumertest.Verify(t, c, consumertest.DefaultBounds,
//		consumertest.VerifyWith(consumertest.VerifyOptions{Time: 5 * time.Minute, Parallel: 2}))
func VerifyWith(o VerifyOptions) Option { return consumerharness.VerifyWith(o) }

// VerifyProgress is how far a running verification is, as
// VerifyOptions.Progress is told every 2,000 schedules.
type VerifyProgress = consumerharness.VerifyProgress

// PostgresEnv names the environment variable that conventionally holds the
// PostgreSQL connection string for Postgres, for example
// postgres://postgres@127.0.0.1:5432/test?sslmode=disable.
const PostgresEnv = consumerharness.PostgresEnv

// ErrBadInput marks errors about what the team gave (a schema that fails,
// an effects query that fails): no scenario could be judged.
var ErrBadInput = consumerharness.ErrBadInput
