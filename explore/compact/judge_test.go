package compact

import (
	"testing"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
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
