package gen

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/idemcheck/idemcheck/faults/scenario"
)

// StepKind is a kind of step the consumption generator draws: an op of the
// scenario vocabulary, a shape (a fault pattern drawn as one choice), or
// reorder, a delivery out of order.
type StepKind string

// The kinds Consumption draws, each with a weight (Weights).
const (
	// KindRun weighs scenario.OpRun. Weights read its old spelling, "step",
	// as this kind.
	KindRun         StepKind = "run"
	KindDeliver     StepKind = "deliver"
	KindProduce     StepKind = "produce"
	KindAdvance     StepKind = "advance"
	KindCrash       StepKind = "crash"
	KindDuplicate   StepKind = "duplicate"
	KindCleanup     StepKind = "cleanup"
	KindSkew        StepKind = "skew"
	KindClockStep   StepKind = "clock-step"
	KindReplay      StepKind = "replay"
	KindProduceFail StepKind = "produce-fail"
	// KindReorder weighs a delivery out of order (the broker hands a worker
	// another than the first eligible message) against one in order, which
	// weighs 1: at the default 3, three deliveries in four are out of order.
	KindReorder StepKind = "reorder"
	// KindCrashAt is the shape of a crash at a pipeline point.
	KindCrashAt StepKind = "crash-at"
	// KindTakeover is the shape of a lease takeover.
	KindTakeover StepKind = "takeover"
	// KindCleanupReclaim is the shape of a cleanup racing a redelivery.
	KindCleanupReclaim StepKind = "cleanup-reclaim"
	// KindFail weighs scenario.OpFail, which only a team's consumer plays:
	// Consumption never draws it, and Weights given to it reject it.
	KindFail StepKind = "fail"
	// KindRebalance weighs scenario.OpRebalance, which only a team's
	// consumer of a log broker plays: Consumption never draws it.
	KindRebalance StepKind = "rebalance"
	// KindStep is KindRun's old name.
	//
	// Deprecated: use KindRun; the kind is written "run" and "step" is only
	// read.
	KindStep = KindRun
)

// CanonicalKind is kind under its current name: an old spelling ("step")
// is the kind it now names ("run").
func CanonicalKind(kind StepKind) StepKind {
	return StepKind(scenario.Canonical(scenario.Op(kind)))
}

// kinds are the kinds in the order of Kinds, each with its default weight.
var kinds = []struct {
	kind   StepKind
	weight int
	// fault: swarm mode may switch the kind off in a scenario; the others
	// are the work every scenario needs to be about anything.
	fault bool
}{
	{KindRun, 3, false}, {KindDeliver, 2, false}, {KindProduce, 2, false},
	{KindDuplicate, 1, true}, {KindReorder, 3, true}, {KindCrash, 1, true}, {KindAdvance, 1, true},
	{KindSkew, 1, true}, {KindClockStep, 1, true}, {KindCleanup, 1, true}, {KindReplay, 1, true},
	{KindProduceFail, 1, true}, {KindCrashAt, 1, true}, {KindTakeover, 1, true}, {KindCleanupReclaim, 1, true},
}

// Kinds lists every kind a weight can be given to.
func Kinds() []StepKind {
	out := make([]StepKind, len(kinds))
	for i, k := range kinds {
		out[i] = k.kind
	}
	return out
}

// DefaultWeight is the weight kind has unless Weights says otherwise; 0
// for a kind the generator does not draw.
func DefaultWeight(kind StepKind) int {
	for _, k := range kinds {
		if k.kind == kind {
			return k.weight
		}
	}
	return 0
}

// MaxWeight bounds a weight: beyond it the other kinds would all but
// vanish, and a spelling mistake (30000 for 3) is more likely than intent.
const MaxWeight = 1000

// Weights say how often Consumption draws each kind of step: a kind of
// weight 6 is drawn twice as often as one of weight 3, and a kind of
// weight 0 never (nor any shape that plays it). A kind missing from the
// map has its DefaultWeight; nil is the defaults, which draw the scenarios
// Consumption draws.
//
// Produce weighs the extra produces (a producer retrying): every event is
// produced once whatever its weight.
//
// A team's consumer is drawn by the same type over the kinds its world
// plays (run, fail, crash, advance, duplicate, replay; see
// consumertest.Faults), with defaults of its own: one type, so that a
// kind means the same weight of the same op in both worlds.
type Weights map[StepKind]int

// Of is the weight of kind in w.
func (w Weights) Of(kind StepKind) int {
	if n, ok := w.Given(kind); ok {
		return n
	}
	return DefaultWeight(kind)
}

// Given is the weight w gives kind, under its name or an old spelling of
// it, and whether it gives one.
func (w Weights) Given(kind StepKind) (int, bool) {
	if n, ok := w[kind]; ok {
		return n, true
	}
	for k, n := range w {
		if CanonicalKind(k) == kind {
			return n, true
		}
	}
	return 0, false
}

// Validate rejects a kind Consumption does not draw and a weight outside
// 0..MaxWeight.
func (w Weights) Validate() error { return w.ValidateOf(Kinds()) }

// ValidateOf rejects a kind not among known (a world's kinds) and a
// weight outside 0..MaxWeight; a kind given twice, under its name and an
// old spelling, is an error too.
func (w Weights) ValidateOf(known []StepKind) error {
	seen := map[StepKind]bool{}
	for _, k := range slices.Sorted(maps.Keys(w)) {
		if !slices.Contains(known, CanonicalKind(k)) {
			return fmt.Errorf("%q is not a kind of step; the kinds are %s", k, kindList(known))
		}
		if seen[CanonicalKind(k)] {
			return fmt.Errorf("%s is given twice", CanonicalKind(k))
		}
		seen[CanonicalKind(k)] = true
		if n := w[k]; n < 0 || n > MaxWeight {
			return fmt.Errorf("%s=%d: a weight is a whole number from 0 to %d", k, n, MaxWeight)
		}
	}
	return nil
}

// String is w as ParseWeights reads it: the kinds whose weight is not the
// default, in the order of Kinds ("" for the defaults).
func (w Weights) String() string {
	var parts []string
	for _, k := range kinds {
		if n := w.Of(k.kind); n != k.weight {
			parts = append(parts, fmt.Sprintf("%s=%d", k.kind, n))
		}
	}
	return strings.Join(parts, ",")
}

// ParseWeights reads weights written KIND=N,KIND=N (e.g. crash=0,skew=3);
// the kinds not named keep their default.
func ParseWeights(spec string) (Weights, error) { return ParseWeightsOf(spec, Kinds()) }

// ParseWeightsOf reads weights written KIND=N,KIND=N for a world whose
// kinds are known; an old spelling ("step=2") is read as the kind it now
// names.
func ParseWeightsOf(spec string, known []StepKind) (Weights, error) {
	w := Weights{}
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		kind := CanonicalKind(StepKind(strings.TrimSpace(k)))
		if !ok {
			return nil, fmt.Errorf("%q is not KIND=WEIGHT (e.g. crash=0,skew=3)", part)
		}
		if !slices.Contains(known, kind) {
			return nil, fmt.Errorf("%q is not a kind of step; the kinds are %s", kind, kindList(known))
		}
		if _, dup := w[kind]; dup {
			return nil, fmt.Errorf("%s is given twice", kind)
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 || n > MaxWeight {
			return nil, fmt.Errorf("%s=%s: a weight is a whole number from 0 to %d", kind, strings.TrimSpace(v), MaxWeight)
		}
		w[kind] = n
	}
	return w, nil
}

func kindList(known []StepKind) string {
	out := make([]string, len(known))
	for i, k := range known {
		out[i] = string(k)
	}
	return strings.Join(out, ", ")
}

// Config shapes what Consumption draws.
type Config struct {
	// Weights of the kinds of step (nil: the defaults).
	Weights Weights
	// Swarm: each scenario first draws which fault kinds it plays (each
	// kind of non-zero weight on or off, as a coin toss), then draws its
	// steps from those alone. A scenario with few kinds plays each of them
	// more often, so combinations the full mix dilutes — many crashes with
	// no cleanup, say — are reached (swarm testing, Groce et al. 2012).
	// Step, deliver and produce are in every scenario.
	Swarm bool
}

// baseOps is the menu of the default weights, in the order rapid shrinks
// a choice towards (its first option first): the ops from the most to the
// least useful, the shapes last. Weights keep this order; a kind weighted
// above its default adds its further copies after it, in the order of Kinds.
var baseOps = []scenario.Op{
	scenario.OpRun, scenario.OpDeliver, scenario.OpProduce, scenario.OpRun, scenario.OpDeliver,
	scenario.OpAdvance, scenario.OpRun, scenario.OpCrash, scenario.OpDuplicate, scenario.OpCleanup,
	scenario.OpProduce, scenario.OpSkew, scenario.OpClockStep, scenario.OpReplay, scenario.OpProduceFail,
	shapeCrashAt, shapeTakeover, shapeCleanupReclaim,
}

// opKind is the kind an entry of the menu is weighed as.
func opKind(op scenario.Op) StepKind {
	if name, ok := strings.CutPrefix(string(op), "shape:"); ok {
		return StepKind(name)
	}
	return StepKind(op)
}

// kindOp is the menu entry of a kind (none for reorder, which is drawn
// within a delivery).
func kindOp(k StepKind) (scenario.Op, bool) {
	switch k {
	case KindReorder:
		return "", false
	case KindCrashAt, KindTakeover, KindCleanupReclaim:
		return scenario.Op("shape:" + string(k)), true
	}
	return scenario.Op(k), true
}

// menu is the list of ops a step is drawn from, uniformly: each kind as
// many times as its weight. weight gives the weights in force.
func menu(weight func(StepKind) int) []scenario.Op {
	on := func(op scenario.Op) bool {
		if weight(opKind(op)) == 0 {
			return false
		}
		for _, o := range shapeOps[op] {
			if weight(opKind(o)) == 0 {
				return false
			}
		}
		return true
	}
	var out []scenario.Op
	seen := map[scenario.Op]int{}
	for _, op := range baseOps {
		if seen[op] < weight(opKind(op)) && on(op) {
			out = append(out, op)
		}
		seen[op]++
	}
	for _, k := range kinds {
		op, ok := kindOp(k.kind)
		if !ok || !on(op) {
			continue
		}
		for range weight(k.kind) - seen[op] {
			out = append(out, op)
		}
	}
	return out
}
