package compact

import (
	"fmt"

	"github.com/idemcheck/idemcheck/faults/scenario"
)

type op uint8

const (
	opProduce op = iota
	opProduceFail
	opDuplicate
	opDeliver
	opStep
	opCrash
	opAdvance
	opSkew
	opClockStep
	opCleanup
	opReplay
)

// Step is a schedule step (scenario.Step) by index: the event, the worker
// and the node it names, N copies of a duplicate or the pick of a
// delivery, Ms of time or skew.
type Step struct {
	Op     op
	Event  int
	Worker int
	Node   int
	N      int
	Ms     int64
}

// Compile reads a scenario step for the world cfg.
func Compile(cfg *Config, st scenario.Step) (Step, error) {
	sc := cfg.Sc
	worker := func() (int, error) {
		for i, w := range sc.Config.Workers {
			if w.Name == st.Worker {
				return i, nil
			}
		}
		return 0, fmt.Errorf("compact: step %s: unknown worker %q", st.Op, st.Worker)
	}
	node := func() (int, error) {
		for i, n := range sc.Config.Nodes {
			if n.Name == st.Node {
				return i, nil
			}
		}
		return 0, fmt.Errorf("compact: step %s: unknown node %q", st.Op, st.Node)
	}
	event := func() (int, error) {
		if st.Event < 0 || st.Event >= len(cfg.Events) {
			return 0, fmt.Errorf("compact: step %s: no event %d", st.Op, st.Event)
		}
		return st.Event, nil
	}
	var out Step
	var err error
	switch st.Op {
	case scenario.OpProduce, scenario.OpProduceFail, scenario.OpDuplicate:
		out.Op = map[scenario.Op]op{scenario.OpProduce: opProduce, scenario.OpProduceFail: opProduceFail, scenario.OpDuplicate: opDuplicate}[st.Op]
		out.Event, err = event()
		out.N = st.N
	case scenario.OpDeliver:
		out.Op, out.N = opDeliver, st.Pick
		out.Worker, err = worker()
	case scenario.OpRun, scenario.OpCrash, scenario.OpCleanup:
		out.Op = map[scenario.Op]op{scenario.OpRun: opStep, scenario.OpCrash: opCrash, scenario.OpCleanup: opCleanup}[st.Op]
		out.Worker, err = worker()
	case scenario.OpAdvance:
		out.Op, out.Ms = opAdvance, st.Ms
	case scenario.OpSkew, scenario.OpClockStep:
		out.Op, out.Ms = opSkew, st.Ms
		if st.Op == scenario.OpClockStep {
			out.Op = opClockStep
		}
		out.Node, err = node()
	case scenario.OpReplay:
		out.Op = opReplay
	default:
		return out, fmt.Errorf("compact: unknown step %q", st.Op)
	}
	return out, err
}

// IsPipeline reports whether the step is a pipeline step or a crash of
// worker Worker.
func (st Step) IsPipeline() bool { return st.Op == opStep || st.Op == opCrash }

// IsStep and IsDeliver name the steps a worker's state makes a no-op.
func (st Step) IsStep() bool    { return st.Op == opStep }
func (st Step) IsDeliver() bool { return st.Op == opDeliver }

// Idle reports whether st would leave s exactly as it is, judging nothing:
// a produce or produce-fail of an event already produced or failing, a
// duplicate of an event never produced, a cleanup with no record to
// remove, a skew a node already has, a clock step of 0 ms, a replay with
// nothing but replayed messages, a crash of an idle worker, a delivery to
// a busy worker or to one whose group has nothing eligible, even once the
// broker has ticked (nothing in flight is due). Such a step reaches its
// parent's state again. It reports false when unsure (an advance moves
// time).
func (st Step) Idle(cfg *Config, s *State) bool {
	switch st.Op {
	case opCrash:
		// crash zeroes the worker, and judges nothing of an idle one.
		return s.workers[st.Worker] == worker{}
	case opDeliver:
		if s.workers[st.Worker].stage != stageIdle {
			return true
		}
		ng, g := cfg.Groups, cfg.Workers[st.Worker].Group
		for i := range s.ents {
			e := &s.ents[i]
			if e.status == stInflight && s.now >= e.delivered+cfg.AckTimeoutMs {
				return false // the tick takes it back
			}
			if i%ng == g && e.status == stPending && e.eligible <= s.now {
				return false
			}
		}
		return true
	case opReplay:
		for _, m := range s.msgs {
			if m.origin != originReplayed {
				return false
			}
		}
		return true
	case opProduce, opProduceFail:
		g := s.gate[st.Event]
		return g == gateCommitted || g == gatePending
	case opDuplicate:
		for _, m := range s.msgs {
			if int(m.event) == st.Event && m.origin == originProduced {
				return false
			}
		}
		return true
	case opCleanup:
		return s.cleanup(cfg) == 0
	case opSkew:
		return s.skew[st.Node] == st.Ms
	case opClockStep:
		return st.Ms == 0
	}
	return false
}
