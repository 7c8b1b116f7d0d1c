package consumerharness

import (
	"fmt"
	"hash/fnv"

	"pgregory.net/rapid"

	"github.com/idemcheck/idemcheck/faults/gen"
)

// The scenarios of a consumer of a log broker (Consumer.Log): the same
// Scenario, with Partitions set.

// DefaultPartitions is the number of partitions a log scenario's topic
// has unless the scenario says otherwise.
const DefaultPartitions = 2

// maxPartitions bounds Scenario.Partitions.
const maxPartitions = 8

// validateLog reports what makes s unplayable on a log broker: a
// partition count out of range, an assignment naming no worker, a
// duplicate step or a poison event (a log scenario has neither: see
// docs/consumers.md, "On a log broker").
func (s *Scenario) validateLog() []string {
	var errs []string
	if s.Partitions == 0 {
		if len(s.Assignment) > 0 {
			errs = append(errs, "assignment without partitions (an assignment is a log broker's)")
		}
		return errs
	}
	if s.Partitions < 0 || s.Partitions > maxPartitions {
		errs = append(errs, fmt.Sprintf("partitions %d (1 to %d)", s.Partitions, maxPartitions))
	}
	if len(s.Assignment) > 0 && len(s.Assignment) != s.Partitions {
		errs = append(errs, fmt.Sprintf("assignment of %d partitions (the topic has %d)", len(s.Assignment), s.Partitions))
	}
	for p, w := range s.Assignment {
		if w < 1 || w > s.Workers {
			errs = append(errs, fmt.Sprintf("assignment: partition %d to worker %d of %d", p, w, s.Workers))
		}
	}
	for i, st := range s.Steps {
		if st.Op == OpDuplicate {
			errs = append(errs, fmt.Sprintf("step %d: duplicate on a log broker (a record appended twice would be two records; log scenarios have none)", i+1))
		}
	}
	for _, e := range s.Events {
		if e.Poison {
			errs = append(errs, fmt.Sprintf("event %s: poison on a log broker (log scenarios have none)", e.ID))
		}
	}
	return errs
}

// owner is the worker (from 1) that owns partition p at the start.
func (s *Scenario) owner(p int) int {
	if len(s.Assignment) > 0 {
		return s.Assignment[p]
	}
	return p%s.Workers + 1
}

// partitionOf is the partition an event of user goes to among n: by a
// hash of the key, as a producer's default partitioner does, so that one
// user's events keep their order.
func partitionOf(user string, n int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(user))
	return int(h.Sum32() % uint32(n))
}

// logWeights are the weights a log scenario is drawn with unless told
// otherwise: as a queue's, with rebalances and without duplicates (which a
// log scenario has none of).
var logWeights = map[gen.StepKind]int{
	gen.KindRun: 13, gen.KindCrash: 2, gen.KindFail: 1, gen.KindAdvance: 2, gen.KindReplay: 1, gen.KindRebalance: 2,
}

// logWeightOf is kind's weight in a log scenario under w.
func logWeightOf(w gen.Weights, kind gen.StepKind) int {
	if kind == gen.KindDuplicate {
		return 0
	}
	if n, ok := w.Given(kind); ok {
		return n
	}
	return logWeights[kind]
}

// LogGeneratorWith draws scenarios for a consumer of a log broker: two to
// six events of two to three users (no poison, no payload collisions),
// one to three workers, one to three partitions (DefaultPartitions most
// often), and up to maxSteps steps drawn by their weights in w (nil: the
// defaults), stalls among them as in GeneratorWith.
func LogGeneratorWith(maxSteps int, w gen.Weights) *rapid.Generator[*Scenario] {
	menu, total := stepMenu([]gen.StepKind{gen.KindRun, gen.KindCrash, gen.KindFail, gen.KindAdvance, gen.KindReplay, gen.KindRebalance},
		func(k gen.StepKind) int { return logWeightOf(w, k) })
	return rapid.Custom(func(t *rapid.T) *Scenario {
		s := &Scenario{Version: ScenarioVersion, Policy: DefaultPolicy}
		s.Workers = rapid.IntRange(1, 3).Draw(t, "workers")
		s.Partitions = rapid.SampledFrom([]int{DefaultPartitions, DefaultPartitions, 1, 3}).Draw(t, "partitions")
		n := rapid.IntRange(2, 6).Draw(t, "events")
		for i := range n {
			s.Events = append(s.Events, Event{ID: fmt.Sprintf("e%d", i+1), User: fmt.Sprintf("u%d", 1+rapid.IntRange(0, 2).Draw(t, "user")), Amount: int64(100 * (i + 1))})
		}
		if total == 0 {
			return s
		}
		drawSchedule(t, s, maxSteps, menu, total, 3)
		return s
	})
}

// asLog makes a queue scenario (a fuzzing input's) one of a log broker:
// DefaultPartitions partitions, its poison events healthy, its payload
// repeats their own, and each duplicate a rebalance of the partition and
// to the worker its event number names.
func asLog(s *Scenario) *Scenario {
	out := s.clone()
	out.Partitions = DefaultPartitions
	for i := range out.Events {
		e := &out.Events[i]
		e.Poison, e.Payload, e.Amount = false, "", int64(100*(i+1))
	}
	for i, st := range out.Steps {
		if st.Op == OpDuplicate {
			out.Steps[i] = Step{Op: OpRebalance, Worker: st.Pick%out.Workers + 1, Pick: st.Pick % out.Partitions}
		}
	}
	return out
}
