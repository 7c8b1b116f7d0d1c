package compact

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/internal/history"
	"github.com/idemcheck/idemcheck/internal/hunt"
	"github.com/idemcheck/idemcheck/internal/law"
	"github.com/idemcheck/idemcheck/properties"
)

// oneWorld is one event of the given fate, a group of two workers (and a
// second group with none, for the laws that need a message nobody takes).
func oneWorld(fate scenario.Fate, emptyGroup bool) *Config {
	sc := &scenario.Consumption{Config: scenario.Config{Topic: "orders", Consumers: []string{"g1"}, Nodes: []scenario.Node{{Name: "n1"}},
		Workers: []scenario.Worker{{Name: "w1", Consumer: "g1", Node: "n1"}, {Name: "w2", Consumer: "g1", Node: "n1"}},
		Policy:  broker.Policy{MaxAttempts: 2, BackoffMs: 100, MaxBackoffMs: 400, AckTimeoutMs: 1000}, LeaseMs: 1000, RetentionMs: 10_000},
		Events: []scenario.Event{{ID: "e1", OrderID: "o1", UserID: "u1", AmountCents: 100, Fate: fate}}}
	if emptyGroup {
		sc.Config.Consumers = append(sc.Config.Consumers, "g2")
	}
	cfg, err := NewConfig(sc)
	if err != nil {
		panic(err)
	}
	return cfg
}

func play(s *State, cfg *Config, j *Judge, steps ...Step) {
	for _, st := range steps {
		s.Apply(cfg, j, st)
	}
}

var (
	produce = Step{Op: opProduce}
	deliver = Step{Op: opDeliver}
	step    = Step{Op: opStep}
)

// TestEveryLawCanBreak corrupts a state the way a broken implementation
// would leave it, for every law, and checks that the judge names that law:
// the compact checks can fail, although the reference never makes them.
func TestEveryLawCanBreak(t *testing.T) {
	cases := map[Law]struct {
		fate  scenario.Fate
		empty bool
		off   Law // a law switched off so that this one is the first broken
		bad   func(s *State, cfg *Config, j *Judge)
	}{
		LawAtMostOnce: {bad: func(s *State, cfg *Config, j *Judge) {
			play(s, cfg, j, produce, deliver, step, step, step)
			s.ledger[0][0] = 2
			j.storeWritten(s, cfg)
		}},
		LawClaimStoreDedupes: {bad: func(s *State, cfg *Config, j *Judge) {
			play(s, cfg, j, produce, deliver, step, step)
			s.ledger[0][0] = 1 // a credit the claim store did not stop
			play(s, cfg, j, step)
		}},
		LawRetentionWindow: {bad: func(s *State, cfg *Config, j *Judge) {
			play(s, cfg, j, produce, deliver, step, step, step)
			j.removing(s, cfg, 0, 0) // just finished
		}},
		LawLedgerUnchanged: {off: LawCreditedOrDLQ, bad: func(s *State, cfg *Config, j *Judge) {
			play(s, cfg, j, produce, deliver, step, step, step, step) // credited and acked
			s.ledger[0][0], s.recs[0][0] = 0, record{}                // then lost
			s.Finish(cfg, j)                                          // the replay credits it again
		}},
		LawAttemptsCount: {bad: func(s *State, cfg *Config, j *Judge) {
			play(s, cfg, j, produce)
			s.ents[0].deliveries = 1
			play(s, cfg, j, deliver)
		}},
		LawAtMostMaxAttempts: {off: LawAttemptsCount, bad: func(s *State, cfg *Config, j *Judge) {
			play(s, cfg, j, produce)
			s.ents[0].attempts, s.ents[0].deliveries = 2, 2
			play(s, cfg, j, deliver)
		}},
		LawDLQAfterMaxAttempts: {bad: func(s *State, cfg *Config, j *Judge) {
			play(s, cfg, j, produce, deliver)
			j.dlqEntry(s, cfg, dlqEntry{attempts: 1, lastErr: reasonAckTimout})
		}},
		LawPoisonAtOnce: {fate: scenario.FatePoison, bad: func(s *State, cfg *Config, j *Judge) {
			play(s, cfg, j, produce, deliver, step, step)
			s.workers[0].stage = stageNack // poison nacked instead of dead-lettered
			play(s, cfg, j, step)
		}},
		LawDLQMetadata: {bad: func(s *State, cfg *Config, j *Judge) {
			play(s, cfg, j, produce, deliver)
			j.dlqEntry(s, cfg, dlqEntry{attempts: 1})
		}},
		LawQuiesces: {empty: true, bad: func(s *State, cfg *Config, j *Judge) {
			play(s, cfg, j, produce) // g2 has no worker: its message waits forever
			s.Finish(cfg, j)
		}},
		LawCreditedOrDLQ: {fate: scenario.FatePoison, bad: func(s *State, cfg *Config, j *Judge) {
			play(s, cfg, j, produce)
			s.ledger[0][0] = 1 // poison credited
			s.recs[0][0] = record{state: recProcessed, attempts: 1, token: 1, started: s.now, finished: s.now}
			s.Finish(cfg, j)
		}},
		LawHealthyApplied: {bad: func(s *State, cfg *Config, j *Judge) {
			play(s, cfg, j, produce, deliver, step) // claimed
			// The pipeline nacks it without a fault and without releasing
			// the claim: every redelivery finds it locked by a settled
			// holder, and the event is dead-lettered uncredited.
			s.workers[0].stage, s.workers[0].result, s.workers[0].reason = stageNack, resTransient, reasonTransient
			s.Finish(cfg, j)
		}},
		LawNotStuck: {bad: func(s *State, cfg *Config, j *Judge) {
			play(s, cfg, j, produce, deliver, step, step, step, step)
			s.recs[0][0] = record{state: recProcessing, attempts: 1, token: 1, started: s.now, lease: s.now + 10*cfg.LeaseMs}
			s.ledger[0][0] = 0
			s.Finish(cfg, j)
		}},
		LawTogether: {bad: func(s *State, cfg *Config, j *Judge) {
			s.ledger[0][0] = 1
			j.storeWritten(s, cfg)
		}},
		LawStaleChangesNothing: {bad: func(s *State, cfg *Config, j *Judge) {
			play(s, cfg, j, produce, deliver, step, step)
			s.latest[0][0]++ // a newer token was issued, yet the commit lands
			play(s, cfg, j, step)
		}},
		LawNotReenqueued: {bad: func(s *State, cfg *Config, j *Judge) {
			s.enqueue(cfg, 0, originProduced)
			s.enqueue(cfg, 0, originProduced)
			s.judgeProducerGate(cfg, j)
		}},
		LawDLQOnce: {bad: func(s *State, cfg *Config, j *Judge) {
			play(s, cfg, j, produce)
			s.dlq = append(s.dlq, dlqEntry{attempts: 2, lastErr: reasonAckTimout}, dlqEntry{attempts: 2, lastErr: reasonAckTimout})
			s.judgeProducerGate(cfg, j)
		}},
	}
	for l := LawNone + 1; l < numLaws; l++ {
		tc, ok := cases[l]
		if !ok {
			t.Errorf("no case breaks %s", l)
			continue
		}
		t.Run(l.String(), func(t *testing.T) {
			fate := tc.fate
			if fate == "" {
				fate = scenario.FateOK
			}
			cfg := oneWorld(fate, tc.empty)
			s := New(cfg)
			j := NewJudge(func(x Law) bool { return x != tc.off }, false)
			tc.bad(s, cfg, j)
			if got := j.Broken(); got != l {
				t.Fatalf("broke %s, want %s", got, l)
			}
			// The judge that has every law off says nothing.
			s = New(cfg)
			quiet := NewJudge(func(Law) bool { return false }, false)
			tc.bad(s, cfg, quiet)
			if got := quiet.Broken(); got != LawNone {
				t.Fatalf("a judge with every law off reported %s", got)
			}
		})
	}
}

// TestLawsAreTheProperties checks that every compact law names a law of
// the consumption properties, and every such law has a compact one.
func TestLawsAreTheProperties(t *testing.T) {
	known := map[string]bool{}
	for _, p := range properties.ForKind(scenario.KindConsumption) {
		for _, l := range p.Laws {
			known[properties.ID(p.Name, l.Name)] = true
		}
	}
	for l := LawNone + 1; l < numLaws; l++ {
		if !known[l.String()] {
			t.Errorf("compact law %s is no law of the consumption properties", l)
		}
		delete(known, l.String())
	}
	for id := range known {
		t.Errorf("law %s has no compact check", id)
	}
}

// sharedLaws are the laws with one judge function over a history (package
// internal/history) that the compact judge restates as its fast path.
var sharedLaws = []Law{LawHealthyApplied, LawNotReenqueued, LawDLQOnce}

// compactBroken finishes a copy of s with a judge of law l alone and
// reports whether it broke l.
func compactBroken(s *State, cfg *Config, l Law) bool {
	var c State
	c.CopyFrom(s)
	j := NewJudge(func(x Law) bool { return x == l }, false)
	c.Finish(cfg, j)
	return j.Broken() == l
}

// sharedBroken finishes a copy of s as Finish does and judges the shared
// laws by their functions over the history of the state once quiet
// (healthy-applied, before the replay) and at the end (producer-gate).
func sharedBroken(s *State, cfg *Config) map[Law]bool {
	var c State
	c.CopyFrom(s)
	j := NewJudge(func(Law) bool { return false }, false)
	out := map[Law]bool{}
	if !c.Drain(cfg, j) {
		return out // not quiet: only quiesces is judged, and no shared law
	}
	quiet := c.History(cfg, true)
	c.replay(cfg)
	again := c.Drain(cfg, j)
	c.probe(cfg, j)
	var bs []history.Breach
	if again {
		bs = history.Judge(quiet, law.HealthyApplied)
	}
	bs = append(bs, history.Judge(c.History(cfg, again), law.NotReenqueued, law.DLQOnce)...)
	for _, b := range bs {
		out[LawOf(b.Law)] = true
	}
	return out
}

// TestTheFastPathAgreesWithTheSharedJudge holds the compact judge, the
// explorer's fast path, equal to the one function of each law it restates
// (package internal/history): on states drawn schedules reach, and on
// those states broken the way those laws see (a consumer's giving up, a
// key enqueued again, a message dead-lettered twice), both name the same
// laws broken. The draws are seeded, so that every law is seen broken
// (and the comparison is not of passes alone) on every run of the test.
func TestTheFastPathAgreesWithTheSharedJudge(t *testing.T) {
	broken := map[Law]int{}
	hunt.CheckWithFlags(t, map[string]string{"rapid.seed": "1", "rapid.checks": "2000"}, func(t *rapid.T) {
		sc := world(t)
		cfg, err := NewConfig(sc)
		if err != nil {
			t.Fatal(err)
		}
		s := New(cfg)
		j := NewJudge(nil, false)
		for range rapid.IntRange(1, 25).Draw(t, "steps") {
			cs, err := Compile(cfg, stepOf(t, sc))
			if err != nil {
				t.Fatal(err)
			}
			s.Apply(cfg, j, cs)
		}
		switch rapid.IntRange(0, 3).Draw(t, "break") {
		case 1:
			if len(s.ents) > 0 {
				s.ents[rapid.IntRange(0, len(s.ents)-1).Draw(t, "entry")].gaveUp = true
			}
		case 2:
			s.enqueue(cfg, int8(rapid.IntRange(0, len(sc.Events)-1).Draw(t, "event")), originProduced)
		case 3:
			if len(s.dlq) > 0 {
				s.dlq = append(s.dlq, s.dlq[rapid.IntRange(0, len(s.dlq)-1).Draw(t, "dlq")])
			}
		}
		shared := sharedBroken(s, cfg)
		for _, l := range sharedLaws {
			if got := compactBroken(s, cfg, l); got != shared[l] {
				t.Fatalf("%s: the compact judge says broken=%t, the shared judge %t", l, got, shared[l])
			}
			if shared[l] {
				broken[l]++
			}
		}
	})
	for _, l := range sharedLaws {
		if broken[l] == 0 {
			t.Errorf("no drawn state broke %s: the comparison never saw it fail", l)
		}
	}
	t.Logf("states broken, by law: %v", broken)
}
