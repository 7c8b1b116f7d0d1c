package consumerharness

import (
	"fmt"
	"regexp"
	"slices"

	"github.com/idemcheck/idemcheck/internal/hunt"
)

// Reduce shrinks a counterexample further than rapid does: it drops, in
// turn, the last worker, each event, blocks of steps, each step and each
// pair of steps, and makes values simpler (the default retry policy, a pick
// of zero, a failure made a plain move, a shorter time step, workers
// renamed so that an idle one is the last), keeping every change for which keep still holds (keep
// returns the judged result when the same law still breaks), until no
// change is kept. Last, it gives what is left canonical names (see
// canonical) when the renamed scenario still breaks the law. It returns s
// itself and nil when nothing could be removed or renamed.
func Reduce(s *Scenario, keep func(*Scenario) *Result) (*Scenario, *Result) {
	var last *Result
	var from *Scenario // the scenario whose candidates are tried
	cur := hunt.Reduce(s, func(c *Scenario) []*Scenario { from = c; return reductions(c) }, func(c *Scenario) bool {
		if c.Validate() != nil || !smaller(c, from) {
			return false
		}
		r := keep(c)
		if r != nil {
			last = r
		}
		return r != nil
	})
	// Canonical names, or failing that (workers renamed play another
	// interleaving in the drain) canonical events and users.
	for _, workers := range []bool{true, false} {
		if c := canonical(cur, workers); c != nil && c.Validate() == nil {
			if r := keep(c); r != nil {
				return c, r
			}
		}
	}
	return cur, last
}

// The names the generators give: events e1, e2, ..., users u1, u2.
var (
	generatedEvent = regexp.MustCompile(`^e[1-9][0-9]*$`)
	generatedUser  = regexp.MustCompile(`^u[1-9][0-9]*$`)
)

// canonical is s as the generator would have drawn it, the parts the
// reduction removed never drawn: its events named e1, e2, ... in order
// (with the amount the generator gives an event of that number, 100 cents
// times it, unless it is poison or repeats another's payload), its users
// u1, u2, ... and its workers w1, w2, ... in the order they first appear
// (the workers by the steps that name them, the others after them in
// their order). Names not of the generators' kind (a hand-written
// scenario's) are kept; so are the workers' unless workers is set. It
// returns nil when s is canonical already.
func canonical(s *Scenario, workers bool) *Scenario {
	c := s.clone()
	ids := map[string]string{}
	for j, e := range s.Events {
		if generatedEvent.MatchString(e.ID) {
			ids[e.ID] = fmt.Sprintf("e%d", j+1)
		}
	}
	rename := func(id string) string {
		if n, ok := ids[id]; ok {
			return n
		}
		return id
	}
	users := map[string]string{}
	for j, e := range s.Events {
		n := &c.Events[j]
		n.ID = rename(e.ID)
		if generatedUser.MatchString(e.User) {
			if _, ok := users[e.User]; !ok {
				users[e.User] = fmt.Sprintf("u%d", len(users)+1)
			}
			n.User = users[e.User]
		}
		switch {
		case e.Payload != "":
			n.Payload = rename(e.Payload)
			if k := slices.IndexFunc(c.Events[:j], func(o Event) bool { return o.ID == n.Payload }); k >= 0 {
				n.User, n.Amount = c.Events[k].User, c.Events[k].Amount
			}
		case !e.Poison && e.Amount > 0 && e.Amount%100 == 0:
			n.Amount = int64(100 * (j + 1))
		}
	}
	// The workers, by first appearance.
	order := make([]int, 0, s.Workers)
	for _, st := range s.Steps {
		if st.Op == OpRun || st.Op == OpCrash || st.Op == OpFail {
			if st.Worker >= 1 && st.Worker <= s.Workers && !slices.Contains(order, st.Worker) {
				order = append(order, st.Worker)
			}
		}
	}
	for w := 1; w <= s.Workers; w++ {
		if !workers {
			order = order[:0]
		}
		if !slices.Contains(order, w) {
			order = append(order, w)
		}
	}
	to := make([]int, s.Workers+1)
	for i, w := range order {
		to[w] = i + 1
	}
	for i, st := range c.Steps {
		if st.Worker >= 1 && st.Worker <= s.Workers {
			c.Steps[i].Worker = to[st.Worker]
		}
	}
	a, _ := s.Marshal()
	b, _ := c.Marshal()
	if string(a) == string(b) {
		return nil
	}
	return c
}

// measure orders scenarios by simplicity, so that every reduction kept
// makes the scenario strictly simpler and the pass ends.
func measure(s *Scenario) []int64 {
	var workers, fails, picks, ms int64
	for _, st := range s.Steps {
		workers += int64(st.Worker)
		picks += int64(st.Pick)
		ms += st.Ms
		if st.Op == OpFail {
			fails++
		}
	}
	policy := int64(0)
	if s.Policy != DefaultPolicy {
		policy = 1
	}
	return []int64{int64(len(s.Steps)), int64(len(s.Events)), int64(s.Workers), policy, workers, fails, picks, ms}
}

func smaller(a, b *Scenario) bool { return slices.Compare(measure(a), measure(b)) < 0 }

// reductions lists the candidates, the biggest first.
func reductions(s *Scenario) []*Scenario {
	var out []*Scenario
	if s.Workers > 1 {
		c := s.clone()
		c.Workers--
		c.Steps = c.Steps[:0]
		for _, st := range s.Steps {
			if (st.Op == OpRun || st.Op == OpCrash || st.Op == OpFail) && st.Worker > c.Workers {
				continue
			}
			c.Steps = append(c.Steps, st)
		}
		out = append(out, c)
	}
	for i := range s.Events {
		if len(s.Events) == 1 {
			break
		}
		out = append(out, withoutEvent(s, i))
	}
	for i := range s.Steps {
		out = append(out, withoutSteps(s, i, i+1))
	}
	// An event together with the first steps, which may be the ones that
	// handled it: without them the rest of the schedule lines up again.
	if len(s.Events) > 1 {
		for i := range s.Events {
			for k := 1; k <= len(s.Steps); k++ {
				c := withoutEvent(s, i)
				c.Steps = c.Steps[min(k, len(c.Steps)):]
				out = append(out, c)
			}
		}
	}
	// Blocks of steps, halves first (delta debugging's chunks).
	for size := len(s.Steps) / 2; size >= 3; size /= 2 {
		for i := 0; i+size <= len(s.Steps); i += size {
			out = append(out, withoutSteps(s, i, i+size))
		}
	}
	// Two steps at once: a worker's move and the move that lines it up
	// with another's often go together.
	for i := range s.Steps {
		for j := i + 1; j < len(s.Steps); j++ {
			out = append(out, withoutSteps(withoutSteps(s, j, j+1), i, i+1))
		}
	}
	// Simpler values, one at a time.
	with := func(change func(c *Scenario)) {
		c := s.clone()
		change(c)
		out = append(out, c)
	}
	if s.Policy != DefaultPolicy {
		with(func(c *Scenario) { c.Policy = DefaultPolicy })
	}
	for i, st := range s.Steps {
		switch {
		case st.Op == OpRun && st.Pick != 0:
			with(func(c *Scenario) { c.Steps[i].Pick = 0 })
		case st.Op == OpFail:
			with(func(c *Scenario) { c.Steps[i].Op = OpRun })
		case st.Op == OpAdvance && st.Ms > 100:
			with(func(c *Scenario) { c.Steps[i].Ms = 100 })
		}
	}
	// Swap two workers' names, so that the one left doing nothing can go.
	if s.Workers > 1 {
		for a := 1; a < s.Workers; a++ {
			c := s.clone()
			for i, st := range c.Steps {
				switch st.Worker {
				case a:
					c.Steps[i].Worker = s.Workers
				case s.Workers:
					c.Steps[i].Worker = a
				}
			}
			out = append(out, c)
		}
	}
	return out
}

// withoutSteps is s without its steps i to j-1.
func withoutSteps(s *Scenario, i, j int) *Scenario {
	c := s.clone()
	c.Steps = append(c.Steps[:i:i], s.Steps[j:]...)
	return c
}

// withoutEvent is s without event i and the duplicates of it.
func withoutEvent(s *Scenario, i int) *Scenario {
	c := s.clone()
	c.Events = append(c.Events[:i:i], s.Events[i+1:]...)
	c.Steps = c.Steps[:0]
	for _, st := range s.Steps {
		if st.Op == OpDuplicate {
			if st.Pick == i {
				continue
			}
			if st.Pick > i {
				st.Pick--
			}
		}
		c.Steps = append(c.Steps, st)
	}
	return c
}
