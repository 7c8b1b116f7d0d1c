package properties

import (
	"fmt"
	"regexp"
	"slices"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/internal/hunt"
)

// Reduce shrinks a counterexample further than rapid does (and, last,
// gives what is left canonical names, see Canonical, when keep still
// accepts them): it drops, in
// turn, each consumer group, worker, node, event, step (and, for projection
// scenarios, replica and delivery), and sets each configuration value to its
// simplest, keeping every change for which keep still holds (keep is "the
// same law still fails", and for a mutant also "the reference still
// passes"), until no change is kept. rapid shrinks the choices it drew; a
// part that plays no role in the failure can survive that, a worker that
// never acts say, and Reduce removes it. It returns s itself when nothing
// could be removed.
//
// A big burst is given some slack first (a few more ticks, so that removing
// a tick before it does not undo the failure it needs its count for), and
// is bisected at the end, to the fewest ticks that still fail: dropping one
// tick at a time would take tens of thousands of plays.
func Reduce(s *scenario.Scenario, keep func(*scenario.Scenario) bool) *scenario.Scenario {
	cur := loosenBursts(s, keep)
	for {
		cur = hunt.Reduce(cur, candidates, func(c *scenario.Scenario) bool { return c.Validate() == nil && keep(c) })
		fewer := bisectBursts(cur, keep)
		if fewer == cur {
			if c := Canonical(cur); c != nil && c.Validate() == nil && keep(c) {
				return c
			}
			return cur
		}
		cur = fewer // and what the cut makes removable, if anything
	}
}

// candidates are the candidate reductions of s, in the order they are
// tried.
func candidates(s *scenario.Scenario) []*scenario.Scenario {
	rs := reductions(s)
	out := make([]*scenario.Scenario, len(rs))
	for i, r := range rs {
		out[i] = r.s
	}
	return out
}

// burstSlack is how many ticks loosenBursts adds to a big burst: more than
// the ticks the other steps of a scenario give a node.
const burstSlack = 64

// loosenBursts returns s with burstSlack more ticks in each big burst, if
// keep still accepts that, or s itself.
func loosenBursts(s *scenario.Scenario, keep func(*scenario.Scenario) bool) *scenario.Scenario {
	if s.Projection == nil {
		return s
	}
	p := cloneProjection(s.Projection)
	loosened := false
	for i, st := range p.Steps {
		if st.Op == scenario.OpBurst && st.Count >= bigBurstTicks {
			p.Steps[i].Count = min(st.Count+burstSlack, scenario.MaxBurst)
			loosened = true
		}
	}
	if c := (&scenario.Scenario{Version: s.Version, Kind: s.Kind, Projection: p}); loosened && c.Validate() == nil && keep(c) {
		return c
	}
	return s
}

// bisectBursts returns s with each burst's count cut to the fewest ticks
// keep still accepts, found by bisection (about 17 plays for a burst of
// 65,536), or s itself when no count could be cut.
func bisectBursts(s *scenario.Scenario, keep func(*scenario.Scenario) bool) *scenario.Scenario {
	if s.Projection == nil {
		return s
	}
	cur := s
	for i, st := range s.Projection.Steps {
		if st.Op != scenario.OpBurst || st.Count <= 1 {
			continue
		}
		withCount := func(n int) *scenario.Scenario {
			p := cloneProjection(cur.Projection)
			p.Steps[i].Count = n
			return &scenario.Scenario{Version: cur.Version, Kind: cur.Kind, Projection: p}
		}
		// keep holds at hi; find the least count in [1, hi] it holds at,
		// as if it held from some count on (a wrap needs that many ticks).
		lo, hi := 0, st.Count
		for hi-lo > 1 {
			mid := lo + (hi-lo)/2
			if keep(withCount(mid)) {
				hi = mid
			} else {
				lo = mid
			}
		}
		if hi < st.Count {
			cur = withCount(hi)
		}
	}
	return cur
}

// Removable names the first part of s — a consumer group, worker, node,
// event, step, replica or delivery — whose removal keep still accepts, or
// returns "" if there is none: a reduced counterexample has none.
func Removable(s *scenario.Scenario, keep func(*scenario.Scenario) bool) string {
	for _, c := range reductions(s) {
		if c.removal && c.s.Validate() == nil && keep(c.s) {
			return c.what
		}
	}
	return ""
}

// reduction is one candidate: s with a part removed (removal) or a value
// made simpler.
type reduction struct {
	what    string
	removal bool
	s       *scenario.Scenario
}

func reductions(s *scenario.Scenario) []reduction {
	var out []reduction
	switch {
	case s.Consumption != nil:
		for _, c := range consumptionReductions(s.Consumption) {
			out = append(out, reduction{c.what, c.removal, &scenario.Scenario{Version: s.Version, Kind: s.Kind, Consumption: c.c}})
		}
	case s.Projection != nil:
		for _, p := range projectionReductions(s.Projection) {
			out = append(out, reduction{p.what, p.removal, &scenario.Scenario{Version: s.Version, Kind: s.Kind, Projection: p.p}})
		}
	}
	return out
}

type consumptionCandidate struct {
	what    string
	removal bool
	c       *scenario.Consumption
}

type projectionCandidate struct {
	what    string
	removal bool
	p       *scenario.Projection
}

// cloneConsumption deep-copies c.
func cloneConsumption(c *scenario.Consumption) *scenario.Consumption {
	out := *c
	out.Config.Consumers = slices.Clone(c.Config.Consumers)
	out.Config.Nodes = slices.Clone(c.Config.Nodes)
	out.Config.Workers = slices.Clone(c.Config.Workers)
	out.Events = slices.Clone(c.Events)
	out.Steps = slices.Clone(c.Steps)
	return &out
}

// withoutWorkers removes the named workers and every step they take.
func withoutWorkers(c *scenario.Consumption, drop func(scenario.Worker) bool) *scenario.Consumption {
	out := cloneConsumption(c)
	gone := map[string]bool{}
	out.Config.Workers = slices.DeleteFunc(out.Config.Workers, func(w scenario.Worker) bool {
		if drop(w) {
			gone[w.Name] = true
			return true
		}
		return false
	})
	out.Steps = slices.DeleteFunc(out.Steps, func(st scenario.Step) bool { return st.Worker != "" && gone[st.Worker] })
	return out
}

// consumptionReductions lists the candidate reductions of c, the biggest
// first.
func consumptionReductions(c *scenario.Consumption) []consumptionCandidate {
	var out []consumptionCandidate
	cfg := c.Config
	// Each consumer group, with its workers and their steps.
	for _, g := range cfg.Consumers {
		r := withoutWorkers(c, func(w scenario.Worker) bool { return w.Consumer == g })
		r.Config.Consumers = slices.DeleteFunc(r.Config.Consumers, func(x string) bool { return x == g })
		out = append(out, consumptionCandidate{"consumer group " + g, true, r})
	}
	// Each worker, with its steps.
	for _, w := range cfg.Workers {
		out = append(out, consumptionCandidate{"worker " + w.Name, true, withoutWorkers(c, func(x scenario.Worker) bool { return x.Name == w.Name })})
	}
	// Each worker merged into another: its steps are taken by the other,
	// and its group goes with it if it was the group's last worker.
	for _, w := range cfg.Workers {
		for _, into := range cfg.Workers {
			if into.Name == w.Name {
				continue
			}
			r := withoutWorkers(c, func(x scenario.Worker) bool { return x.Name == w.Name })
			r.Steps = slices.Clone(c.Steps)
			for i := range r.Steps {
				if r.Steps[i].Worker == w.Name {
					r.Steps[i].Worker = into.Name
				}
			}
			if !slices.ContainsFunc(r.Config.Workers, func(x scenario.Worker) bool { return x.Consumer == w.Consumer }) {
				r.Config.Consumers = slices.DeleteFunc(r.Config.Consumers, func(g string) bool { return g == w.Consumer })
			}
			out = append(out, consumptionCandidate{"worker " + w.Name + " (its steps taken by " + into.Name + ")", true, r})
		}
	}
	// Each node: its workers move to another node, its clock steps go.
	for _, n := range cfg.Nodes {
		for _, m := range cfg.Nodes {
			if m.Name == n.Name {
				continue
			}
			r := cloneConsumption(c)
			for i := range r.Config.Workers {
				if r.Config.Workers[i].Node == n.Name {
					r.Config.Workers[i].Node = m.Name
				}
			}
			r.Config.Nodes = slices.DeleteFunc(r.Config.Nodes, func(x scenario.Node) bool { return x.Name == n.Name })
			r.Steps = slices.DeleteFunc(r.Steps, func(st scenario.Step) bool { return st.Node == n.Name })
			out = append(out, consumptionCandidate{"node " + n.Name, true, r})
			break
		}
	}
	// Each event, with the steps about it.
	for i := range c.Events {
		r := cloneConsumption(c)
		r.Events = slices.Delete(r.Events, i, i+1)
		r.Steps = r.Steps[:0]
		for _, st := range c.Steps {
			switch st.Op {
			case scenario.OpProduce, scenario.OpProduceFail, scenario.OpDuplicate:
				if st.Event == i {
					continue
				}
				if st.Event > i {
					st.Event--
				}
			}
			r.Steps = append(r.Steps, st)
		}
		out = append(out, consumptionCandidate{fmt.Sprintf("event %d (%s)", i, c.Events[i].ID), true, r})
	}
	// Each step.
	for i := range c.Steps {
		r := cloneConsumption(c)
		r.Steps = slices.Delete(r.Steps, i, i+1)
		out = append(out, consumptionCandidate{fmt.Sprintf("step %d (%s)", i, c.Steps[i].Op), true, r})
	}
	// The simplest values: no skew, no tenant, an ok fate, one transient
	// failure, the first eligible message, one copy, the fewest attempts.
	simpler := func(f func(r *scenario.Consumption) bool) {
		r := cloneConsumption(c)
		if f(r) {
			out = append(out, consumptionCandidate{"a simpler value", false, r})
		}
	}
	for i := range cfg.Nodes {
		simpler(func(r *scenario.Consumption) bool {
			changed := r.Config.Nodes[i].SkewMs != 0
			r.Config.Nodes[i].SkewMs = 0
			return changed
		})
	}
	for i := range c.Events {
		simpler(func(r *scenario.Consumption) bool {
			e := &r.Events[i]
			changed := e.Fate != scenario.FateOK
			e.Fate, e.Transient = scenario.FateOK, 0
			return changed
		})
		simpler(func(r *scenario.Consumption) bool {
			e := &r.Events[i]
			changed := e.Fate == scenario.FateTransient && e.Transient > 1
			e.Transient = min(e.Transient, 1)
			return changed
		})
		simpler(func(r *scenario.Consumption) bool {
			changed := r.Events[i].Tenant != ""
			r.Events[i].Tenant = ""
			return changed
		})
	}
	for i, st := range c.Steps {
		simpler(func(r *scenario.Consumption) bool {
			r.Steps[i].Pick = 0
			return st.Pick != 0
		})
		simpler(func(r *scenario.Consumption) bool {
			changed := st.Op == scenario.OpDuplicate && st.N > 1
			if changed {
				r.Steps[i].N = 1
			}
			return changed
		})
	}
	for m := 1; m < cfg.MaxAttempts; m++ {
		simpler(func(r *scenario.Consumption) bool {
			r.Config.MaxAttempts = m
			return true
		})
	}
	return out
}

// cloneProjection deep-copies p.
func cloneProjection(p *scenario.Projection) *scenario.Projection {
	out := *p
	out.Nodes = slices.Clone(p.Nodes)
	out.Steps = slices.Clone(p.Steps)
	out.Replicas = slices.Clone(p.Replicas)
	for i := range out.Replicas {
		out.Replicas[i].Deliveries = slices.Clone(p.Replicas[i].Deliveries)
	}
	return &out
}

// withoutEvents drops the given emitted events from every replica.
func withoutEvents(p *scenario.Projection, gone map[string]bool) {
	for i := range p.Replicas {
		p.Replicas[i].Deliveries = slices.DeleteFunc(p.Replicas[i].Deliveries, func(id string) bool { return gone[id] })
	}
}

// projectionReductions lists the candidate reductions of p, the biggest
// first. Candidates that break the causal history are invalid and skipped.
func projectionReductions(p *scenario.Projection) []projectionCandidate {
	var out []projectionCandidate
	for i := range p.Replicas {
		r := cloneProjection(p)
		r.Replicas = slices.Delete(r.Replicas, i, i+1)
		out = append(out, projectionCandidate{"replica " + p.Replicas[i].Name, true, r})
	}
	for _, n := range p.Nodes {
		r := cloneProjection(p)
		r.Nodes = slices.DeleteFunc(r.Nodes, func(x scenario.Node) bool { return x.Name == n.Name })
		gone := map[string]bool{}
		r.Steps = slices.DeleteFunc(r.Steps, func(st scenario.ProjectionStep) bool {
			if st.Op == scenario.OpEmit && st.Node == n.Name {
				gone[st.ID] = true
			}
			return st.Node == n.Name
		})
		withoutEvents(r, gone)
		out = append(out, projectionCandidate{"node " + n.Name, true, r})
	}
	for i, st := range p.Steps {
		r := cloneProjection(p)
		r.Steps = slices.Delete(r.Steps, i, i+1)
		if st.Op == scenario.OpEmit {
			withoutEvents(r, map[string]bool{st.ID: true})
		}
		out = append(out, projectionCandidate{fmt.Sprintf("step %d (%s)", i, st.Op), true, r})
	}
	for i, rep := range p.Replicas {
		for j := range rep.Deliveries {
			r := cloneProjection(p)
			r.Replicas[i].Deliveries = slices.Delete(r.Replicas[i].Deliveries, j, j+1)
			out = append(out, projectionCandidate{fmt.Sprintf("delivery %d of replica %s", j, rep.Name), true, r})
		}
	}
	for i, n := range p.Nodes {
		if n.SkewMs != 0 {
			r := cloneProjection(p)
			r.Nodes[i].SkewMs = 0
			out = append(out, projectionCandidate{"a simpler value", false, r})
		}
	}
	if p.OnRefusal != "" {
		r := cloneProjection(p)
		r.OnRefusal = ""
		out = append(out, projectionCandidate{"a simpler value", false, r})
	}
	return out
}

// The names the consumption generator gives.
var (
	generatedWorker = regexp.MustCompile(`^w[1-9][0-9]*$`)
	generatedNode   = regexp.MustCompile(`^n[1-9][0-9]*$`)
	generatedEvent  = regexp.MustCompile(`^evt-[0-9]{4}$`)
	generatedOrder  = regexp.MustCompile(`^ord-[1-9][0-9]*$`)
	generatedUser   = regexp.MustCompile(`^usr-[1-9][0-9]*$`)
)

// Canonical is a consumption scenario named as the generator would have
// drawn it without the parts a reduction removed: its workers w1, w2, ...
// and nodes n1, n2, ... in the order the configuration lists them, its
// events evt-0001, evt-0002, ... in order with the amount the generator
// gives an event of that number (100 cents times it), its orders and
// users ord-1, usr-1, ... in the order they first appear. Names of
// another kind (a hand-written scenario's) are kept. It returns nil when
// s is canonical already, or not a consumption scenario.
func Canonical(s *scenario.Scenario) *scenario.Scenario {
	if s.Consumption == nil {
		return nil
	}
	c := cloneConsumption(s.Consumption)
	names := func(re *regexp.Regexp, format string) func(string) string {
		m := map[string]string{}
		return func(old string) string {
			if !re.MatchString(old) {
				return old
			}
			if n, ok := m[old]; ok {
				return n
			}
			m[old] = fmt.Sprintf(format, len(m)+1)
			return m[old]
		}
	}
	worker, node := names(generatedWorker, "w%d"), names(generatedNode, "n%d")
	for i := range c.Config.Nodes {
		c.Config.Nodes[i].Name = node(c.Config.Nodes[i].Name)
	}
	for i := range c.Config.Workers {
		w := &c.Config.Workers[i]
		w.Name, w.Node = worker(w.Name), node(w.Node)
	}
	for i := range c.Steps {
		st := &c.Steps[i]
		if st.Worker != "" {
			st.Worker = worker(st.Worker)
		}
		if st.Node != "" {
			st.Node = node(st.Node)
		}
	}
	order, user := names(generatedOrder, "ord-%d"), names(generatedUser, "usr-%d")
	for i := range c.Events {
		e := &c.Events[i]
		if generatedEvent.MatchString(e.ID) {
			e.ID = fmt.Sprintf("evt-%04d", i+1)
		}
		e.OrderID, e.UserID = order(e.OrderID), user(e.UserID)
		if e.AmountCents > 0 && e.AmountCents%100 == 0 {
			e.AmountCents = int64(100 * (i + 1))
		}
	}
	out := &scenario.Scenario{Version: s.Version, Kind: s.Kind, Consumption: c}
	a, errA := scenario.Marshal(s)
	b, errB := scenario.Marshal(out)
	if errA != nil || errB != nil || string(a) == string(b) {
		return nil
	}
	return out
}
