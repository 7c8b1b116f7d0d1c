package gen

import (
	"reflect"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/faults/scenario"
)

const draws = 300

// has reports whether s plays a step of kind k (reorder: a delivery past
// the first eligible message).
func has(s *scenario.Scenario, k StepKind) bool {
	for _, st := range s.Consumption.Steps {
		if k == KindReorder && st.Op == scenario.OpDeliver && st.Pick > 0 || StepKind(st.Op) == k {
			return true
		}
	}
	return false
}

// The ops a weight can take out of every scenario: the kinds that are ops,
// and reorder. (A shape plays ordinary ops; produce is the events' own.)
func removable() []StepKind {
	var out []StepKind
	for _, k := range Kinds() {
		if k != KindProduce && k != KindCrashAt && k != KindTakeover && k != KindCleanupReclaim {
			out = append(out, k)
		}
	}
	return out
}

// Weight 0 leaves a kind out of every scenario, shapes that play it
// included; a non-zero weight draws it.
func TestWeightZeroRemovesAKind(t *testing.T) {
	for _, swarm := range []bool{false, true} {
		for _, k := range removable() {
			off := ConsumptionWith(Config{Weights: Weights{k: 0}, Swarm: swarm})
			on := ConsumptionWith(Config{Weights: Weights{k: 5}, Swarm: swarm})
			seen := false
			for i := range draws {
				if s := off.Example(i); has(s, k) {
					t.Fatalf("swarm %t, %s=0: seed %d plays %s", swarm, k, i, k)
				}
				seen = seen || has(on.Example(i), k)
			}
			if !seen {
				t.Errorf("swarm %t, %s=5: no scenario of %d plays %s", swarm, k, draws, k)
			}
		}
	}
}

// Produce at 0 leaves each event's one produce; a shape at 0 is not drawn
// and the other kinds still are.
func TestWeightZeroProduceAndShapes(t *testing.T) {
	g := ConsumptionWith(Config{Weights: Weights{KindProduce: 0}})
	for i := range draws {
		s := g.Example(i)
		n := 0
		for _, st := range s.Consumption.Steps {
			if st.Op == scenario.OpProduce {
				n++
			}
		}
		if n != len(s.Consumption.Events) {
			t.Fatalf("produce=0: seed %d produces %d times for %d events", i, n, len(s.Consumption.Events))
		}
	}
	only := func(w Weights) []scenario.Op { return menu(w.Of) }
	for _, shape := range []StepKind{KindCrashAt, KindTakeover, KindCleanupReclaim} {
		op, _ := kindOp(shape)
		if m := only(Weights{shape: 0}); len(m) != len(baseOps)-1 || contains(m, op) {
			t.Errorf("%s=0: menu %v", shape, m)
		}
	}
	// crash=0 takes the crash-at shape with it; advance=0 both takeovers.
	if m := only(Weights{KindAdvance: 0}); contains(m, shapeTakeover) || contains(m, shapeCleanupReclaim) || !contains(m, shapeCrashAt) {
		t.Errorf("advance=0: menu %v", m)
	}
	if m := only(Weights{KindCrash: 0}); contains(m, shapeCrashAt) || !contains(m, shapeTakeover) {
		t.Errorf("crash=0: menu %v", m)
	}
	// Every weight 0: the produces alone.
	zero := Weights{}
	for _, k := range Kinds() {
		zero[k] = 0
	}
	s := ConsumptionWith(Config{Weights: zero}).Example(1)
	if len(s.Consumption.Steps) != len(s.Consumption.Events) {
		t.Errorf("every weight 0: steps %v", s.Consumption.Steps)
	}
}

func contains(ops []scenario.Op, op scenario.Op) bool {
	for _, o := range ops {
		if o == op {
			return true
		}
	}
	return false
}

// A weight is a frequency: the menu holds each kind as often as its weight,
// the defaults' menu in its order (the scenarios Consumption always drew).
func TestWeightsAreFrequencies(t *testing.T) {
	if m := menu(Weights(nil).Of); !reflect.DeepEqual(m, baseOps) {
		t.Fatalf("default menu %v, want %v", m, baseOps)
	}
	m := menu(Weights{KindCrash: 4, KindRun: 1}.Of)
	count := map[scenario.Op]int{}
	for _, op := range m {
		count[op]++
	}
	if count[scenario.OpCrash] != 4 || count[scenario.OpRun] != 1 || count[scenario.OpDeliver] != 2 || count[shapeTakeover] != 1 {
		t.Fatalf("menu %v", m)
	}
	want := append([]scenario.Op{scenario.OpRun, scenario.OpDeliver, scenario.OpProduce, scenario.OpDeliver, scenario.OpAdvance}, baseOps[7:]...)
	if !reflect.DeepEqual(m, append(want, scenario.OpCrash, scenario.OpCrash, scenario.OpCrash)) {
		t.Fatalf("menu %v: the default order is not kept", m)
	}
}

// The same seed and Config draw the same scenario; the defaults are
// Consumption, and ConsumptionWithout is weight 0.
func TestWeightsDeterministic(t *testing.T) {
	configs := []Config{{}, {Weights: Weights{KindCrash: 0, KindSkew: 7, KindReorder: 1}}, {Swarm: true}, {Weights: Weights{KindReplay: 9}, Swarm: true}}
	for _, c := range configs {
		for i := range 50 {
			a, b := ConsumptionWith(c).Example(i), ConsumptionWith(c).Example(i)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("%+v seed %d: two draws differ", c, i)
			}
		}
	}
	for i := range 50 {
		if !reflect.DeepEqual(Consumption().Example(i), ConsumptionWith(Config{Weights: Weights{KindCrash: 1, KindRun: 3}}).Example(i)) {
			t.Fatalf("seed %d: the default weights given explicitly draw another scenario", i)
		}
		if !reflect.DeepEqual(ConsumptionWithout(scenario.OpCrash).Example(i), ConsumptionWith(Config{Weights: Weights{KindCrash: 0}}).Example(i)) {
			t.Fatalf("seed %d: ConsumptionWithout(crash) is not crash=0", i)
		}
	}
}

// Swarm mode varies the mix: some scenarios play a kind and some of equal
// length leave it out, where the full mix plays nearly every kind.
func TestSwarmVariesTheMix(t *testing.T) {
	g := ConsumptionWith(Config{Swarm: true})
	for _, k := range []StepKind{KindCrash, KindDuplicate, KindSkew, KindReplay} {
		with, without := 0, 0
		for i := range draws {
			s := g.Example(i)
			if len(s.Consumption.Steps) < 30 {
				continue
			}
			if has(s, k) {
				with++
			} else {
				without++
			}
		}
		if with == 0 || without == 0 {
			t.Errorf("swarm: of the long scenarios %d play %s and %d do not", with, k, without)
		}
	}
}

func TestParseWeights(t *testing.T) {
	w, err := ParseWeights(" crash=0, skew=3 ,reorder=10")
	if err != nil || w.Of(KindCrash) != 0 || w.Of(KindSkew) != 3 || w.Of(KindReorder) != 10 || w.Of(KindRun) != 3 {
		t.Fatalf("%v %v", w, err)
	}
	if got := w.String(); got != "reorder=10,crash=0,skew=3" {
		t.Fatalf("String() = %q", got)
	}
	if again, err := ParseWeights(w.String()); err != nil || again.String() != w.String() {
		t.Fatalf("round trip: %v %v", again, err)
	}
	for spec, want := range map[string]string{
		"crashes=0":       `"crashes" is not a kind of step; the kinds are run, deliver, produce, duplicate, reorder, crash,`,
		"crash":           `"crash" is not KIND=WEIGHT`,
		"crash=-1":        "crash=-1: a weight is a whole number from 0 to 1000",
		"crash=x":         "crash=x: a weight is a whole number",
		"crash=1,crash=2": "crash is given twice",
	} {
		if _, err := ParseWeights(spec); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("ParseWeights(%q) = %v, want %s", spec, err, want)
		}
	}
	if err := (Weights{"nope": 1}).Validate(); err == nil {
		t.Error("Validate accepts a kind that is not drawn")
	}
}

// Weights read step, run's old name, as run: parsed or given in the map.
func TestWeightsReadStepAsRun(t *testing.T) {
	w, err := ParseWeights("step=5")
	if err != nil || w.Of(KindRun) != 5 {
		t.Fatalf("step=5: %v, %v", w, err)
	}
	if (Weights{"step": 0}).Of(KindRun) != 0 || (Weights{"step": 0}).Validate() != nil {
		t.Fatal("a weight given under the old spelling is not run's")
	}
	if err := (Weights{"step": 1, KindRun: 2}).Validate(); err == nil {
		t.Fatal("run given twice validated")
	}
	if _, err := ParseWeights("fail=1"); err == nil {
		t.Fatal("fail, which only a team's consumer plays, parsed for the reference world")
	}
}
