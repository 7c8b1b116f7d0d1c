package consumerharness

import (
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/idemcheck/idemcheck/faults/gen"
	vocab "github.com/idemcheck/idemcheck/faults/scenario"
)

// The consumer world validates exactly the ops the vocabulary's table
// gives it, under the table's names.
func TestScenarioOpsAreTheTables(t *testing.T) {
	for _, term := range vocab.Vocabulary() {
		s := &Scenario{Version: ScenarioVersion, Workers: 1, Policy: DefaultPolicy,
			Events: []Event{{ID: "e1", User: "u1", Amount: 100}},
			Steps:  []Step{{Op: StepOp(term.Op), Worker: 1, Ms: 100}}}
		err := s.Validate()
		if term.Plays(vocab.WorldConsumer) && err != nil {
			t.Errorf("%s: the consumer world plays it, yet %v", term.Op, err)
		}
		if !term.Plays(vocab.WorldConsumer) && (err == nil || !strings.Contains(err.Error(), "unknown op")) {
			t.Errorf("%s: the consumer world does not play it, yet validation says %v", term.Op, err)
		}
	}
	want := []StepOp{OpRun, OpFail, OpCrash, OpAdvance, OpDuplicate, OpReplay, OpRebalance}
	var got []StepOp
	for _, op := range vocab.OpsOf(vocab.WorldConsumer) {
		got = append(got, StepOp(op))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("the table gives the consumer world %v; its constants are %v", got, want)
	}
	for _, k := range Kinds() {
		if DefaultWeight(k) == 0 {
			t.Errorf("%s: a kind of the consumer world without a default weight", k)
		}
	}
}

// A kind of weight 0 is never drawn, and a kind alone is all a schedule
// holds (a stall is runs and an advance, so only while both are on).
func TestGeneratorWeights(t *testing.T) {
	ops := func(w gen.Weights) map[StepOp]int { return opsOf(GeneratorWith(16, w)) }
	logOps := func(w gen.Weights) map[StepOp]int { return opsOf(LogGeneratorWith(16, w)) }
	off := gen.Weights{gen.KindCrash: 0, gen.KindFail: 0}
	if got := ops(off); got[OpCrash] != 0 || got[OpFail] != 0 || got[OpRun] == 0 || got[OpReplay] == 0 {
		t.Errorf("crash and fail off: %v", got)
	}
	for _, k := range Kinds() {
		w := gen.Weights{}
		for _, o := range Kinds() {
			w[o] = 0
		}
		w[k] = 1
		if k != gen.KindRebalance {
			if got := ops(w); len(got) != 1 || got[StepOp(k)] == 0 {
				t.Errorf("%s alone: %v", k, got)
			}
		}
		// A log scenario is drawn from the same kinds but duplicate (a
		// record appended twice would be two records).
		if got := logOps(w); (k == gen.KindDuplicate) != (len(got) == 0) || (k != gen.KindDuplicate && (len(got) != 1 || got[StepOp(k)] == 0)) {
			t.Errorf("%s alone, on a log: %v", k, got)
		}
	}
	none := gen.Weights{}
	for _, k := range Kinds() {
		none[k] = 0
	}
	if got := ops(none); len(got) != 0 {
		t.Errorf("every kind off: %v", got)
	}
	// The same weights, spelled the old way or with the defaults given,
	// draw the same scenarios as the defaults.
	def := GeneratorWith(16, nil)
	for _, w := range []gen.Weights{{gen.KindRun: 13, gen.KindFail: 1}, {"step": 13}} {
		g := GeneratorWith(16, w)
		for i := range 50 {
			a, _ := def.Example(i).Marshal()
			b, _ := g.Example(i).Marshal()
			if string(a) != string(b) {
				t.Fatalf("weights %v draw another scenario than the defaults at seed %d", w, i)
			}
		}
	}
}

// opsOf counts the ops of 300 scenarios g draws.
func opsOf(g *rapid.Generator[*Scenario]) map[StepOp]int {
	out := map[StepOp]int{}
	for i := range 300 {
		for _, st := range g.Example(i).Steps {
			out[st.Op]++
		}
	}
	return out
}

// The consumer world's weights are the reference world's type, over the
// consumer's kinds: fail is one, skew is not.
func TestParseWeights(t *testing.T) {
	w, err := ParseWeights("fail=3,step=2,crash=0")
	if err != nil {
		t.Fatal(err)
	}
	if weightOf(w, gen.KindFail) != 3 || weightOf(w, gen.KindRun) != 2 || weightOf(w, gen.KindCrash) != 0 || weightOf(w, gen.KindReplay) != 1 {
		t.Fatalf("parsed %v", w)
	}
	if _, err := ParseWeights("skew=1"); err == nil || !strings.Contains(err.Error(), "run, fail, crash, advance, duplicate, replay") {
		t.Fatalf("skew: %v", err)
	}
	if err := ValidateWeights(gen.Weights{gen.KindSkew: 1}); err == nil {
		t.Fatal("skew validated for a consumer")
	}
	if err := ValidateWeights(gen.Weights{gen.KindRun: 1, "step": 2}); err == nil {
		t.Fatal("run given twice validated")
	}
	if err := ValidateWeights(gen.Weights{gen.KindCrash: gen.MaxWeight + 1}); err == nil {
		t.Fatal("a weight over the maximum validated")
	}
}

// Faults reaches Hunt's generator: a kind the consumer's world does not
// play is an error naming the option, and weights it plays are drawn by.
func TestGeneratorFaultsOption(t *testing.T) {
	if _, err := Hunt(adrConsumer(), Checks(1), Faults(gen.Weights{gen.KindSkew: 1})); err == nil || !strings.Contains(err.Error(), "Faults") {
		t.Fatalf("skew for a consumer: %v", err)
	}
	res, err := Hunt(adrConsumer(), Checks(5), Seed(1), Faults(gen.Weights{gen.KindCrash: 0, gen.KindFail: 0, gen.KindDuplicate: 0, gen.KindReplay: 0, gen.KindAdvance: 0}))
	if err != nil || res.Failed {
		t.Fatalf("runs alone: %v\n%s", err, res.Report())
	}
}
