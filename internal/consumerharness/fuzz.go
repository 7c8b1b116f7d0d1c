package consumerharness

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Fuzz puts the consumer under Go's native, coverage-guided fuzzing:
//
//	func FuzzLedger(f *testing.F) { consumertest.Fuzz(f, ledgerConsumer) }
//
// From the module's root,
//
//	go test ./ledger -run '^$' -fuzz '^FuzzLedger$'
//
// mutates byte strings, each of which decodes to a scenario (see
// FuzzScenario), and keeps the ones that reach new code of the handler,
// the database driver and the harness. (-run '^$' keeps go test from
// running the package's tests first: one that fails, a Check that finds
// a bug, would stop it before any fuzzing. The seed inputs still run
// first, as the engine's baseline; -fuzz takes one package.) Each scenario plays in
// its own testing/synctest bubble, as under Check, and is judged by the
// same laws. A failing input lands in testdata/fuzz/FuzzLedger as Go's
// fuzzing engine writes it (after the engine's own minimisation of the
// bytes); plain go test replays it, as every file there, and fails with
// Check's report: the broken laws, the go-cmp diff, the numbered trace
// and the go test command that replays that input alone (see
// fuzzReplayCommand).
//
// Outside fuzzing (plain go test, or -run naming one input) a failing
// scenario is first reduced by the harness's reduction pass (see Reduce),
// so the report shows the smallest scenario that still breaks the same
// law, and the size it was reduced from. While fuzzing it is not: the
// engine minimises the input itself, many times over, and the report of
// the input it keeps is printed again, reduced, by the go test command it
// names.
//
// The seed inputs (a handful of scenarios with duplicates, several
// workers, crashes, injected failures, time and a replay) make plain go
// test play a few scenarios; FuzzInput turns a scenario of one's own into
// one more seed for f.Add, before Fuzz is called. Options: MaxSteps (the
// longest schedule an input decodes to, default 16), Postgres, NoReduce,
// and CorpusDir (save each reduced counterexample there, as Hunt does);
// Checks, Seed and ShrinkTime are rapid's and do not apply.
func Fuzz(f *testing.F, c Consumer, opts ...Option) {
	f.Helper()
	cfg := newConfig(opts)
	stop, err := cfg.start()
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(stop)
	if err := preflight(c, &cfg); err != nil {
		f.Fatal(err)
	}
	saved := cfg
	if saved.corpusDir == "" {
		saved.corpusDir = filepath.Join("testdata", "consumertest")
	}
	replaySaved(f, c, saved)
	var seeds [][]byte
	for _, s := range fuzzSeeds {
		in, err := FuzzInput(s)
		if err != nil {
			f.Fatalf("consumertest: a seed of Fuzz does not encode: %v", err)
		}
		f.Add(in)
		seeds = append(seeds, in)
	}
	fuzzing := fuzzingNow()
	f.Fuzz(func(t *testing.T, data []byte) {
		played := cfg
		played.t = t
		s := FuzzScenario(data, cfg.maxSteps)
		if c.Log != nil {
			s = asLog(s)
		}
		res, err := replay(c, s, played)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Failed {
			return
		}
		res.ShrunkSize = s.Size()
		if !fuzzing && !cfg.noReduce {
			res.reduce(c, played, s)
		}
		res.Replay = fuzzReplayCommand(t.Name(), fuzzing, slices.ContainsFunc(seeds, func(in []byte) bool { return bytes.Equal(in, data) }))
		if file := filepath.Join(append([]string{"testdata", "fuzz"}, strings.Split(t.Name(), "/")...)...); fileExists(file) {
			res.CorpusFile = file
		}
		if cfg.corpusDir != "" {
			path, err := SaveScenario(cfg.corpusDir, c.displayName(), res.Law, res.Summary(), res.Scenario, res.Outcome, 0)
			if err != nil {
				t.Fatalf("consumertest: save the counterexample: %v", err)
			}
			res.CorpusFile = path
		}
		t.Fatalf("consumer %q breaks %s (scenario of %d step(s) decoded from the input%s)\n%s",
			c.displayName(), res.Law, res.ShrunkSize, reducedNote(res), res.Report())
	})
}

// fuzzReplayCommand is the command that replays the failing input of the
// fuzz test named name, from the module's root: go test ./PKG -run
// '^FuzzX$/^INPUT$' for an input go test names (a seed, FuzzX/seed#N, or
// a file of testdata/fuzz, FuzzX/HASH). While fuzzing, go test gives the
// input no name: one of Fuzz's own seeds (seed) is replayed by plain go
// test -run '^FuzzX$', with the other seeds; any other input is named by
// go test in its output, as a seed corpus entry or, once the engine has
// minimised a new input, as the file it writes to testdata/fuzz.
func fuzzReplayCommand(name string, fuzzing, seed bool) string {
	pkg := goTestPackage()
	if pkg != "" {
		pkg += " "
	}
	test, input, named := strings.Cut(name, "/")
	switch {
	case named && (!fuzzing || strings.HasPrefix(input, "seed#") || fileExists(filepath.Join("testdata", "fuzz", test, input))):
		return fmt.Sprintf("go test %s-run '%s'", pkg, runPattern(name))
	case seed:
		return fmt.Sprintf("go test %s-run '%s' (a seed input of consumertest.Fuzz: plain go test replays it)", pkg, runPattern(test))
	}
	return fmt.Sprintf("go test %s-run '%s/^INPUT$', INPUT being the file the fuzzing engine writes below to testdata/fuzz/%s once it has minimised the input (or seed#N, when go test says \"failure while testing seed corpus entry: %s/seed#N\"); the replay reduces the scenario too",
		pkg, runPattern(test), test, test)
}

// fuzzingNow reports whether go test runs with -fuzz (the engine, or one
// of its workers), rather than replaying the corpus.
func fuzzingNow() bool {
	fl := flag.Lookup("test.fuzz")
	return fl != nil && fl.Value.String() != ""
}

func reducedNote(res Result) string {
	if res.Scenario.Size() == res.ShrunkSize {
		return ""
	}
	return fmt.Sprintf(", reduced to %d", res.Scenario.Size())
}

// runPattern is the -run pattern that selects exactly the test named name.
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

func fileExists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// The byte form of a scenario, for fuzzing. Every byte string decodes to a
// valid scenario, so the fuzzing engine wastes no input; one byte is one
// step, so that the engine's mutations (a byte changed, inserted, dropped)
// and its minimisation (bytes dropped) change the schedule step by step.
//
//	byte 0: workers 1 + b%3; max_attempts 4 - (b/3)%4
//	byte 1: events 1 + b%4; event i's user is u2 if bit 2+i is set, else u1
//	byte 2: event i is poison if bits 2i and 2i+1 are both set; it
//	        repeats the payload of event i-1 (a payload collision) if
//	        bit 2i+1 alone is set and event i-1 repeats none
//	then one byte a step, up to maxSteps: op b&15, argument a = b>>4
//	   0-9   run worker 1+a%W (9: picking the (a/4)-th eligible message)
//	  10-11  crash worker 1+a%W
//	  12     fail worker 1+a%W
//	  13     advance 100, 1000, 6000 or 60000 ms (a%4)
//	  14     duplicate event a%n
//	  15     replay the stream
//
// A missing header byte reads as 0; bytes past maxSteps steps are ignored.
const fuzzHeader = 3

// FuzzScenario decodes a fuzzing input into a scenario of at most maxSteps
// steps. Every input gives a valid scenario; the same input, the same
// scenario. See Fuzz.
func FuzzScenario(data []byte, maxSteps int) *Scenario {
	at := func(i int) int {
		if i < len(data) {
			return int(data[i])
		}
		return 0
	}
	s := &Scenario{Version: ScenarioVersion, Policy: DefaultPolicy}
	s.Workers = 1 + at(0)%3
	s.Policy.MaxAttempts -= (at(0) / 3) % DefaultPolicy.MaxAttempts
	n := 1 + at(1)%4
	for i := range n {
		e := Event{ID: fmt.Sprintf("e%d", i+1), User: "u1", Amount: int64(100 * (i + 1))}
		if at(1)>>(2+i)&1 == 1 {
			e.User = "u2"
		}
		switch at(2) >> (2 * i) & 3 {
		case 3:
			e.Poison, e.Amount = true, 0
		case 2:
			if i > 0 && s.Events[i-1].Payload == "" {
				o := s.Events[i-1]
				e.User, e.Amount, e.Poison, e.Payload = o.User, o.Amount, o.Poison, o.ID
			}
		}
		s.Events = append(s.Events, e)
	}
	for i := fuzzHeader; i < len(data) && len(s.Steps) < maxSteps; i++ {
		b := int(data[i])
		op, a := b&15, b>>4
		worker := 1 + a%s.Workers
		var st Step
		switch {
		case op < 9:
			st = Step{Op: OpRun, Worker: worker}
		case op == 9:
			st = Step{Op: OpRun, Worker: worker, Pick: a / 4}
		case op < 12:
			st = Step{Op: OpCrash, Worker: worker}
		case op == 12:
			st = Step{Op: OpFail, Worker: worker}
		case op == 13:
			st = Step{Op: OpAdvance, Ms: advances[a%len(advances)]}
		case op == 14:
			st = Step{Op: OpDuplicate, Pick: a % n}
		default:
			st = Step{Op: OpReplay}
		}
		s.Steps = append(s.Steps, st)
	}
	return s
}

// FuzzInput encodes s as a fuzzing input, for f.Add: FuzzScenario gives s
// back (its first maxSteps steps). Only scenarios of the shape Generator
// draws encode: one to three workers, the default retry policy but for
// fewer attempts, one to four events named e1, e2, ... of users u1 and u2
// with the amounts the harness gives them (100 cents times their number,
// 0 for poison), picks of at most 3 and time steps of 100, 1000, 6000 or 60000 ms.
func FuzzInput(s *Scenario) ([]byte, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if s.Workers > 3 {
		bad("%d workers (at most 3)", s.Workers)
	}
	if p := s.Policy; p.BackoffMs != DefaultPolicy.BackoffMs || p.MaxBackoffMs != DefaultPolicy.MaxBackoffMs ||
		p.AckTimeoutMs != DefaultPolicy.AckTimeoutMs || p.MaxAttempts > DefaultPolicy.MaxAttempts {
		bad("policy %+v (only max_attempts may differ from the default, and be at most %d)", p, DefaultPolicy.MaxAttempts)
	}
	if len(s.Events) > 4 {
		bad("%d events (at most 4)", len(s.Events))
	}
	head := []byte{byte(min(s.Workers, 3) - 1 + 3*max(DefaultPolicy.MaxAttempts-s.Policy.MaxAttempts, 0)), byte(max(len(s.Events)-1, 0) % 4), 0}
	for i, e := range s.Events {
		want := Event{ID: fmt.Sprintf("e%d", i+1), User: e.User, Amount: int64(100 * (i + 1))}
		if e.Poison {
			want.Poison, want.Amount = true, 0
		}
		if e.Payload != "" && i > 0 && e.Payload == s.Events[i-1].ID {
			o := s.Events[i-1]
			want.User, want.Amount, want.Poison, want.Payload = o.User, o.Amount, o.Poison, o.ID
		}
		if e != want || (e.User != "u1" && e.User != "u2") {
			bad("event %d is %+v (the inputs' events are e1, e2, ... of u1 or u2 with 100 cents times their number, or the payload of the event before)", i+1, e)
			continue
		}
		if e.User == "u2" {
			head[1] |= 1 << (2 + i)
		}
		switch {
		case e.Payload != "":
			head[2] |= 2 << (2 * i)
		case e.Poison:
			head[2] |= 3 << (2 * i)
		}
	}
	out := head
	for i, st := range s.Steps {
		var op, a int
		switch st.Op {
		case OpRun, OpCrash, OpFail:
			op = map[StepOp]int{OpRun: 0, OpCrash: 10, OpFail: 12}[st.Op]
			a = st.Worker - 1
			if st.Op == OpRun && st.Pick != 0 {
				if st.Pick > 3 {
					bad("step %d picks message %d (at most 3)", i+1, st.Pick)
					continue
				}
				op, a = 9, 4*st.Pick
				for (a%s.Workers)+1 != st.Worker {
					a++
				}
			}
		case OpAdvance:
			k := slices.Index(advances, st.Ms)
			if k < 0 {
				bad("step %d advances %d ms (100, 1000, 6000 or 60000)", i+1, st.Ms)
				continue
			}
			op, a = 13, k
		case OpDuplicate:
			op, a = 14, st.Pick
		case OpReplay:
			op = 15
		}
		out = append(out, byte(a<<4|op))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("consumertest: the scenario has no fuzzing input: %w", errors.Join(errs...))
	}
	return out, nil
}

// fuzzSeeds are Fuzz's seed inputs: the shapes the laws are about, for the
// engine to mutate from, and for plain go test to play.
var fuzzSeeds = []*Scenario{
	// Two workers handle an event and its duplicate in lockstep.
	{Version: 1, Workers: 2, Policy: DefaultPolicy, Events: []Event{{ID: "e1", User: "u1", Amount: 100}},
		Steps: []Step{{Op: OpDuplicate}, {Op: OpRun, Worker: 1}, {Op: OpRun, Worker: 2}, {Op: OpRun, Worker: 1}, {Op: OpRun, Worker: 2},
			{Op: OpRun, Worker: 1}, {Op: OpRun, Worker: 2}, {Op: OpRun, Worker: 1}, {Op: OpRun, Worker: 2}}},
	// A worker crashes deep into its handling; the ack timeout redelivers.
	{Version: 1, Workers: 1, Policy: DefaultPolicy, Events: []Event{{ID: "e1", User: "u1", Amount: 100}, {ID: "e2", User: "u2", Amount: 200}},
		Steps: []Step{{Op: OpRun, Worker: 1}, {Op: OpRun, Worker: 1}, {Op: OpRun, Worker: 1}, {Op: OpRun, Worker: 1}, {Op: OpRun, Worker: 1},
			{Op: OpCrash, Worker: 1}, {Op: OpAdvance, Ms: 6000}}},
	// Injected failures spend the attempts of an event.
	{Version: 1, Workers: 1, Policy: Policy{MaxAttempts: 2, BackoffMs: 100, MaxBackoffMs: 800, AckTimeoutMs: 5000},
		Events: []Event{{ID: "e1", User: "u1", Amount: 100}},
		Steps: []Step{{Op: OpRun, Worker: 1}, {Op: OpFail, Worker: 1}, {Op: OpRun, Worker: 1}, {Op: OpAdvance, Ms: 1000},
			{Op: OpRun, Worker: 1}, {Op: OpFail, Worker: 1}, {Op: OpRun, Worker: 1}}},
	// A poison event among good ones, then the stream replayed.
	{Version: 1, Workers: 2, Policy: DefaultPolicy,
		Events: []Event{{ID: "e1", User: "u1", Amount: 100}, {ID: "e2", User: "u1", Poison: true}, {ID: "e3", User: "u2", Amount: 300}},
		Steps:  []Step{{Op: OpRun, Worker: 1}, {Op: OpRun, Worker: 2, Pick: 1}, {Op: OpReplay}, {Op: OpRun, Worker: 1}, {Op: OpRun, Worker: 2}}},
	// Three workers, one crashing at its first call, time moving on.
	{Version: 1, Workers: 3, Policy: DefaultPolicy,
		Events: []Event{{ID: "e1", User: "u1", Amount: 100}, {ID: "e2", User: "u2", Amount: 200}, {ID: "e3", User: "u1", Amount: 300}, {ID: "e4", User: "u2", Amount: 400}},
		Steps: []Step{{Op: OpRun, Worker: 1}, {Op: OpRun, Worker: 2}, {Op: OpRun, Worker: 3}, {Op: OpCrash, Worker: 2}, {Op: OpRun, Worker: 1},
			{Op: OpRun, Worker: 3}, {Op: OpAdvance, Ms: 100}, {Op: OpDuplicate, Pick: 2}, {Op: OpRun, Worker: 2}, {Op: OpRun, Worker: 1}}},
	// Nothing scheduled: the drain alone.
	{Version: 1, Workers: 1, Policy: DefaultPolicy, Events: []Event{{ID: "e1", User: "u1", Amount: 100}}},
}
