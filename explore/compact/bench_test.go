package compact

import (
	"testing"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
)

// midRun is the state runner's BenchmarkFingerprint fingerprints: two
// events, one duplicated, both workers busy, one mid-pipeline.
func midRun(b *testing.B) (*Config, *State) {
	sc := &scenario.Consumption{Config: scenario.Config{Topic: "orders", Consumers: []string{"g1"}, Nodes: []scenario.Node{{Name: "n1"}},
		Workers: []scenario.Worker{{Name: "w1", Consumer: "g1", Node: "n1"}, {Name: "w2", Consumer: "g1", Node: "n1"}},
		Policy:  broker.Policy{MaxAttempts: 2, BackoffMs: 100, MaxBackoffMs: 400, AckTimeoutMs: 1000}, LeaseMs: 1000, RetentionMs: 10_000},
		Events: []scenario.Event{{ID: "e1", OrderID: "o-ok", UserID: "u1", AmountCents: 100, Fate: scenario.FateOK},
			{ID: "e2", OrderID: "o-ok", UserID: "u1", AmountCents: 100, Fate: scenario.FateOK}}}
	cfg, err := NewConfig(sc)
	if err != nil {
		b.Fatal(err)
	}
	s := New(cfg)
	play(s, cfg, NewJudge(nil, true), Step{Op: opProduce}, Step{Op: opProduce, Event: 1}, Step{Op: opDuplicate, N: 1},
		Step{Op: opDeliver}, Step{Op: opStep}, Step{Op: opDeliver, Worker: 1})
	return cfg, s
}

// BenchmarkFingerprint is the cost of one fingerprint of a compact state
// mid-run, with both symmetries (two orderings of the events).
func BenchmarkFingerprint(b *testing.B) {
	cfg, s := midRun(b)
	f := NewFingerprinter(cfg, true, true)
	b.ReportAllocs()
	for b.Loop() {
		f.Sum(s)
	}
}

// BenchmarkStep is the cost of one transition's state work: a copy of the
// parent into scratch, a pipeline step, and the packing of the result.
func BenchmarkStep(b *testing.B) {
	cfg, s := midRun(b)
	j := NewJudge(nil, true)
	var scratch State
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		scratch.CopyFrom(s)
		scratch.Apply(cfg, j, Step{Op: opStep})
		buf = scratch.Pack(cfg, buf[:0])
	}
}

// BenchmarkFinish is the cost of judging a new state at quiescence: the
// drain, the replay, the drain again and the final laws.
func BenchmarkFinish(b *testing.B) {
	cfg, s := midRun(b)
	j := NewJudge(nil, true)
	var scratch State
	b.ReportAllocs()
	for b.Loop() {
		scratch.CopyFrom(s)
		scratch.Finish(cfg, j)
	}
	if j.Broken() != LawNone {
		b.Fatal(j.Broken())
	}
}
