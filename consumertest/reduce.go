package consumertest

// Reduce shrinks a counterexample further than rapid does: it drops, in
// turn, the last worker, each event and each step, and sets each delivery
// pick to zero, keeping every change for which keep still holds (keep
// returns the judged result when the same law still breaks), until no
// change is kept. It returns s itself and nil when nothing could be
// removed.
func Reduce(s *Scenario, keep func(*Scenario) *Result) (*Scenario, *Result) {
	cur := s
	var last *Result
	for {
		var next *Scenario
		for _, c := range reductions(cur) {
			if c.Validate() != nil {
				continue
			}
			if r := keep(c); r != nil {
				next, last = c, r
				break
			}
		}
		if next == nil {
			return cur, last
		}
		cur = next
	}
}

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
		out = append(out, c)
	}
	for i := range s.Steps {
		c := s.clone()
		c.Steps = append(c.Steps[:i:i], s.Steps[i+1:]...)
		out = append(out, c)
	}
	for i, st := range s.Steps {
		if st.Op == OpRun && st.Pick != 0 {
			c := s.clone()
			c.Steps[i].Pick = 0
			out = append(out, c)
		}
	}
	return out
}
