package consumersnode_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/scenario"
	"github.com/idemcheck/idemcheck/impl/adapter/consumerproc"
)

// BenchmarkInsertFirst: one delivery of insert-first.js (begin, two
// inserts, commit, done: five round trips to the process) on a plain
// SQLite database, against the same statements run directly from Go.
func BenchmarkInsertFirst(b *testing.B) {
	ctx := context.Background()
	b.Run("node", func(b *testing.B) {
		db := openBenchDB(b)
		f, c, err := worker(b, "insert-first.js")("w1", db)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		b.ResetTimer()
		for i := range b.N {
			if err := f(ctx, db, message("e"+strconv.Itoa(i), 500)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("direct", func(b *testing.B) {
		db := openBenchDB(b)
		b.ResetTimer()
		for i := range b.N {
			id := "e" + strconv.Itoa(i)
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO processed_events (consumer_group, event_id) VALUES (?, ?)`, "ledger", id); err != nil {
				b.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO ledger (event_id, user_id, amount_cents) VALUES (?, ?, ?)`, id, "u1", 500); err != nil {
				b.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkFind is the time the harness takes to find each broken Node.js
// consumer breaking its law: the median over five seeds of the time to the
// first failing scenario (shrinking not included), with the scenarios
// drawn until then. Run it with -benchtime 1x.
func BenchmarkFind(b *testing.B) {
	for _, br := range broken {
		b.Run(br.file, func(b *testing.B) {
			c := consumer(b, br.file)
			var found []time.Duration
			var checks []int
			for range b.N {
				for seed := uint64(1); seed <= 5; seed++ {
					res, err := consumertest.Hunt(c, consumertest.Checks(200), consumertest.Seed(seed),
						consumertest.ShrinkTime(time.Millisecond), consumertest.NoReduce())
					if err != nil {
						b.Fatal(err)
					}
					if !res.Failed || res.Law != br.law {
						b.Fatalf("seed %d: failed %v, law %q, want %s", seed, res.Failed, res.Law, br.law)
					}
					found = append(found, res.FoundAfter)
					checks = append(checks, res.Checks)
				}
			}
			slices.Sort(found)
			slices.Sort(checks)
			b.ReportMetric(found[len(found)/2].Seconds(), "s-to-find(median)")
			b.ReportMetric(float64(checks[len(checks)/2]), "scenarios(median)")
		})
	}
}

// BenchmarkScenarios is the harness's throughput on a Node.js consumer:
// the generator's first drawn scenarios (events, workers, crashes,
// duplicates, the replay), played one after another and judged (no
// shrinking), per second. "pool" reuses processes that declare reset from
// worker to worker (warmed as fuzzrun warms them); "fresh" starts a
// process for every worker and every restart and kills it after, protocol
// version 1's way. Run it with -benchtime 100x.
func BenchmarkScenarios(b *testing.B) {
	const warmUp = 10
	gen := scenario.Generator(16)
	for _, file := range []string{"insert-first.js", "lru.js"} {
		for _, mode := range []struct {
			name    string
			maxIdle int
		}{{"pool", 0}, {"fresh", -1}} {
			b.Run(file+"/"+mode.name, func(b *testing.B) {
				d := declared(b, file)
				pl := consumerproc.NewPool([]string{node(b), file}, consumerproc.Options{MaxIdle: mode.maxIdle})
				defer pl.Close()
				pl.Warm(3)
				c := consumertest.Consumer{Name: file, Schema: d.Schema, Worker: pl.Worker, Effects: consumertest.PerEvent(d.Effects)}
				// Warm-up, as a campaign's first scenarios (and fuzzrun's
				// reset check) are: each process's JIT compiles the
				// client and the handler on their first deliveries.
				for i := range warmUp {
					if _, err := consumertest.Replay(c, gen.Example(i)); err != nil {
						b.Fatal(err)
					}
				}
				b.ResetTimer()
				for i := range b.N {
					if _, err := consumertest.Replay(c, gen.Example(i)); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "scenarios/s")
				st := pl.Stats()
				b.ReportMetric(float64(st.Started), "processes")
			})
		}
	}
}

// BenchmarkVerify is the model checker's speed on insert-first.js:
// schedules of the search within smallBounds, each played from the start,
// per second. "pool" reuses processes that declare reset from worker to
// worker and schedule to schedule (after the warm-up fuzzrun's reset check
// gives them: three drawn scenarios, twice); "fresh" starts a process for
// every worker of every schedule and every restart, as a process that
// does not declare reset is served. Run it with -benchtime 500x (pool) or
// 10x (fresh).
func BenchmarkVerify(b *testing.B) {
	gen := scenario.Generator(16)
	for _, mode := range []struct {
		name    string
		maxIdle int
	}{{"pool", 0}, {"fresh", -1}} {
		b.Run("insert-first.js/"+mode.name, func(b *testing.B) {
			d := declared(b, "insert-first.js")
			pl := consumerproc.NewPool([]string{node(b), "insert-first.js"}, consumerproc.Options{MaxIdle: mode.maxIdle})
			defer pl.Close()
			pl.Warm(3)
			c := consumertest.Consumer{Name: "insert-first", Schema: d.Schema, Worker: pl.Worker, Effects: consumertest.PerEvent(d.Effects)}
			for i := range 6 {
				if _, err := consumertest.Replay(c, gen.Example(i/2)); err != nil {
					b.Fatal(err)
				}
			}
			started := pl.Stats().Started
			b.ResetTimer()
			res, err := consumertest.Explore(c, smallBounds, consumertest.CorpusDir(b.TempDir()),
				consumertest.VerifyWith(consumertest.VerifyOptions{Schedules: int64(b.N)}))
			if err != nil {
				b.Fatal(err)
			}
			if res.Failed {
				b.Fatalf("insert-first.js flagged:\n%s", res.Report())
			}
			b.ReportMetric(float64(res.Schedules)/b.Elapsed().Seconds(), "schedules/s")
			b.ReportMetric(float64(pl.Stats().Started-started), "processes")
		})
	}
}
