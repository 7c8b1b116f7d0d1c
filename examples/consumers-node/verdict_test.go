package consumersnode_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/laws"
	"github.com/idemcheck/idemcheck/consumertest/scenario"
)

// consumer is the Node.js consumer in file, as a team puts it under the
// harness: the schema and effects query it declares, and its process as
// the Worker.
func consumer(t testing.TB, file string) consumertest.Consumer {
	d := declared(t, file)
	return consumertest.Consumer{
		Name:    strings.TrimSuffix(file, ".js"),
		Schema:  d.Schema,
		Worker:  worker(t, file),
		Effects: consumertest.PerEvent(d.Effects),
	}
}

// broken lists the broken consumers and the law that catches each.
var broken = []struct{ file, law string }{
	{"effect-then-mark.js", laws.SingleCredit},
	{"check-then-act.js", laws.SingleCredit},
	{"lru.js", laws.SingleCredit},
	{"mark-first.js", laws.NothingLost},
}

// corpusDir holds the shrunk counterexamples of the broken consumers.
var corpusDir = filepath.Join("testdata", "consumertest")

// huntEnv makes TestHunt hunt every broken consumer with rapid's shrinking
// and save the counterexamples in corpusDir: minutes on a loaded machine,
// so not part of go test ./... .
const huntEnv = "IDEMCHECK_HUNT_NODE"

// TestCorrectNeverFlagged: insert-first.js passes every drawn scenario.
func TestCorrectNeverFlagged(t *testing.T) { correctNeverFlagged(t) }

func correctNeverFlagged(t *testing.T, opts ...consumertest.Option) {
	res, err := consumertest.Hunt(consumer(t, "insert-first.js"), append([]consumertest.Option{consumertest.Checks(8), consumertest.Seed(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed {
		t.Fatalf("insert-first.js was flagged:\n%s", res.Report())
	}
}

// TestBrokenFound: the harness's own generator finds broken consumers
// breaking their law within a few drawn scenarios. (Draws are rapid's
// examples by index: the same scenarios every run.) Only the two found
// in the first few draws run here, since each scenario starts processes;
// BenchmarkFind and TestHunt search for all of them.
func TestBrokenFound(t *testing.T) {
	gen := scenario.Generator(16)
	for _, b := range broken {
		if b.file != "lru.js" && b.file != "check-then-act.js" {
			continue
		}
		t.Run(b.file, func(t *testing.T) {
			c := consumer(t, b.file)
			for i := range 40 {
				res, err := consumertest.Replay(c, gen.Example(i))
				if err != nil {
					t.Fatal(err)
				}
				if res.Failed {
					if !slices.ContainsFunc(res.Breaches, func(br laws.Breach) bool { return br.Law == b.law }) {
						t.Fatalf("scenario %d broke %s, not %s:\n%s", i, res.Law, b.law, res.Report())
					}
					t.Logf("scenario %d of the generator breaks %s", i, b.law)
					return
				}
			}
			t.Fatalf("40 drawn scenarios and %s was never caught", b.file)
		})
	}
}

// TestBrokenShrunk: each broken consumer has a shrunk counterexample of at
// most 8 steps in corpusDir (saved by TestHunt), and replaying it breaks
// the law again.
func TestBrokenShrunk(t *testing.T) { brokenShrunk(t) }

// brokenShrunk replays the saved counterexamples with opts.
func brokenShrunk(t *testing.T, opts ...consumertest.Option) {
	for _, b := range broken {
		t.Run(b.file, func(t *testing.T) {
			c := consumer(t, b.file)
			files, _ := filepath.Glob(filepath.Join(corpusDir, c.Name+"-"+b.law+"-*.json"))
			if len(files) == 0 {
				t.Fatalf("no counterexample of %s in %s: run %s=1 go test -run TestHunt ./examples/consumers-node", b.law, corpusDir, huntEnv)
			}
			for _, f := range files {
				s, err := scenario.Load(f)
				if err != nil {
					t.Fatal(err)
				}
				if s.Size() > 8 {
					t.Errorf("%s: %d steps, want at most 8", f, s.Size())
				}
				res, err := consumertest.Replay(c, s, opts...)
				if err != nil {
					t.Fatal(err)
				}
				if !res.Failed || res.Law != b.law {
					t.Errorf("%s: replayed, broke %q, want %s\n%s", f, res.Law, b.law, res.Report())
				}
			}
		})
	}
}

// TestHunt hunts each broken consumer the way a team's test does, rapid's
// shrinking included, and saves the counterexample (see huntEnv).
func TestHunt(t *testing.T) {
	if os.Getenv(huntEnv) == "" {
		t.Skipf("set %s=1 to hunt the broken Node.js consumers with shrinking (slow) and save their counterexamples", huntEnv)
	}
	for _, b := range broken {
		t.Run(b.file, func(t *testing.T) {
			res, err := consumertest.Hunt(consumer(t, b.file), consumertest.Checks(100), consumertest.Seed(1), consumertest.CorpusDir(corpusDir))
			if err != nil {
				t.Fatal(err)
			}
			if !res.Failed || res.Law != b.law {
				t.Fatalf("%s: failed %v, law %q, want %s", b.file, res.Failed, res.Law, b.law)
			}
			t.Logf("%s: %s after %d scenario(s) in %v, shrunk to %d step(s) in %v: %s", b.file, res.Law, res.Checks, res.FoundAfter.Round(1e6), res.Scenario.Size(), res.Elapsed.Round(1e6), res.CorpusFile)
			if res.Scenario.Size() > 8 {
				t.Errorf("shrunk to %d steps, want at most 8", res.Scenario.Size())
			}
		})
	}
}

// TestCheck: the one-call form of a team's Go test, consumertest.Check,
// plays each scenario in a testing/synctest bubble; the processes run
// outside it, and the correct consumer passes.
func TestCheck(t *testing.T) {
	consumertest.Check(t, consumer(t, "insert-first.js"), consumertest.Checks(3), consumertest.Seed(1))
}

// TestSameScenarioSameTrace: a process consumer replays byte for byte: the
// same scenario gives the same trace, statement by statement.
func TestSameScenarioSameTrace(t *testing.T) {
	c := consumer(t, "effect-then-mark.js")
	files, _ := filepath.Glob(filepath.Join(corpusDir, "effect-then-mark-*.json"))
	if len(files) == 0 {
		t.Fatal("no saved counterexample of effect-then-mark.js")
	}
	s, err := scenario.Load(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var traces [2]string
	for i := range traces {
		res, err := consumertest.Replay(c, s)
		if err != nil {
			t.Fatal(err)
		}
		traces[i] = strings.Join(res.Outcome.Trace.Lines(), "\n")
	}
	if traces[0] != traces[1] {
		t.Errorf("two plays of one scenario differ:\n%s\n---\n%s", traces[0], traces[1])
	}
}
