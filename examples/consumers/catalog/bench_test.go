package catalog_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/scenario"
	"github.com/idemcheck/idemcheck/examples/consumers/adr"
	"github.com/idemcheck/idemcheck/examples/consumers/catalog"
	"github.com/idemcheck/idemcheck/impl/contract/event"
	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// BenchmarkADRScenarios is the harness's throughput on the ADR consumer:
// drawn scenarios played and judged (fresh database, schema, workers,
// schedule, drain, replay, drain, queries), one after another.
func BenchmarkADRScenarios(b *testing.B) {
	e, _ := catalog.Lookup("adr")
	res, err := consumertest.Hunt(e.Consumer, consumertest.Checks(b.N), consumertest.Seed(1), consumertest.NoReduce())
	if err != nil {
		b.Fatal(err)
	}
	if res.Failed {
		b.Fatalf("the ADR consumer was flagged:\n%s", res.Report())
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "scenarios/s")
}

// BenchmarkLogOffsetsScenarios is the harness's throughput on the correct
// consumer of a log broker (logoffsets): drawn log scenarios played and
// judged (fresh database, schema, workers, assignments, schedule, drain,
// a read of the effects at each commit, queries), one after another.
func BenchmarkLogOffsetsScenarios(b *testing.B) {
	e, _ := catalog.Lookup("logoffsets")
	res, err := consumertest.Hunt(e.Consumer, consumertest.Checks(b.N), consumertest.Seed(1), consumertest.NoReduce())
	if err != nil {
		b.Fatal(err)
	}
	if res.Failed {
		b.Fatalf("the logoffsets consumer was flagged:\n%s", res.Report())
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "scenarios/s")
}

const benchEvents = 50

// benchScenario is one worker handling 50 events, no faults: the drain
// delivers each once and the replay once more.
func benchScenario() *scenario.Scenario {
	s := &scenario.Scenario{Version: scenario.Version, Workers: 1, Policy: scenario.DefaultPolicy}
	for i := range benchEvents {
		s.Events = append(s.Events, scenario.Event{ID: fmt.Sprintf("e%d", i+1), User: "u1", Amount: int64(100 + i)})
	}
	return s
}

// statements counts the database calls of a trace.
func statements(lines []string) int {
	n := 0
	for _, l := range lines {
		for _, op := range []string{"begin", "exec ", "query ", "rows end", "commit", "rollback"} {
			if strings.HasPrefix(l, "w1 "+op) {
				n++
				break
			}
		}
	}
	return n
}

// BenchmarkStatementUnderHarness is the cost of one statement of the ADR
// consumer under the harness: each a scheduling point, with the broker,
// the goroutine hand-over, the trace and the judgement around them.
func BenchmarkStatementUnderHarness(b *testing.B) {
	e, _ := catalog.Lookup("adr")
	s := benchScenario()
	first, err := consumertest.Replay(e.Consumer, s)
	if err != nil || first.Failed {
		b.Fatalf("%v\n%s", err, first.Report())
	}
	n := statements(first.Outcome.Trace.Lines())
	b.ResetTimer()
	for b.Loop() {
		if _, err := consumertest.Replay(e.Consumer, s); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/statement")
}

// BenchmarkStatementDirect runs the same statements without the harness:
// a fresh in-memory SQLite database with the same settings, the schema,
// and the ADR handler called on each event twice (the delivery and its
// replay), one after another.
func BenchmarkStatementDirect(b *testing.B) {
	e, _ := catalog.Lookup("adr")
	first, err := consumertest.Replay(e.Consumer, benchScenario())
	if err != nil {
		b.Fatal(err)
	}
	n := statements(first.Outcome.Trace.Lines())
	ctx := context.Background()
	var msgs []handler.Message
	for i := range benchEvents {
		ev := event.OrderPaid{EventID: fmt.Sprintf("e%d", i+1), UserID: "u1", OrderID: "o", AmountCents: int64(100 + i)}
		msgs = append(msgs, handler.Message{EventID: ev.EventID, Event: ev, Topic: "orders", Group: "consumer", IdempotencyKey: ev.EventID, Attempts: 1})
	}
	i := 0
	b.ResetTimer()
	for b.Loop() {
		i++
		db, err := sql.Open("sqlite", fmt.Sprintf("file:/bench-direct-%d?vfs=memdb&_txlock=immediate", i))
		if err != nil {
			b.Fatal(err)
		}
		for _, stmt := range strings.Split(adr.Schema, ";") {
			if strings.TrimSpace(stmt) != "" {
				if _, err := db.ExecContext(ctx, stmt); err != nil {
					b.Fatal(err)
				}
			}
		}
		for range 2 {
			for _, m := range msgs {
				if err := adr.Handle(ctx, db, m); err != nil {
					b.Fatal(err)
				}
			}
		}
		db.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/statement")
}

// BenchmarkBrokenFound hunts each broken example with 5 seeds and logs,
// as a row of the broken consumers table in docs/consumers.md, the median time and scenarios to the first
// failure and the counterexample's size after rapid's shrink and after
// the reduction pass. Run it with -benchtime=1x.
func BenchmarkBrokenFound(b *testing.B) {
	for b.Loop() {
		var rows []string
		for _, e := range catalog.All() {
			if e.Correct() {
				continue
			}
			var found []time.Duration
			var checks, shrunk, reduced []int
			for seed := uint64(1); seed <= 5; seed++ {
				res, err := consumertest.Hunt(e.Consumer, consumertest.Checks(5000), consumertest.Seed(seed))
				if err != nil {
					b.Fatal(err)
				}
				if !res.Failed || res.Law != e.Law {
					b.Fatalf("%s seed %d: want %s broken, got:\n%s", e.Name, seed, e.Law, res.Report())
				}
				found = append(found, res.FoundAfter)
				checks = append(checks, res.Checks)
				shrunk = append(shrunk, res.ShrunkSize)
				reduced = append(reduced, res.Scenario.Size())
			}
			rows = append(rows, fmt.Sprintf("| `%s` | %s | %s | 5/5 | %d | %.3f | %.3f | %d | %d |", e.Name, e.Doc, e.Law,
				median(checks), median(found).Seconds(), slices.Max(found).Seconds(), slices.Max(shrunk), slices.Max(reduced)))
		}
		b.Logf("\n%s", strings.Join(rows, "\n"))
	}
}

func median[T int | time.Duration](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
