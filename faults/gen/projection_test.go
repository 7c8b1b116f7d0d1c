package gen

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/internal/hunt"
)

// Every drawn projection scenario is valid: a generator that draws nonsense
// makes every failure a false alarm.
func TestProjectionDrawsValidScenarios(t *testing.T) {
	hunt.Check(t, func(t *rapid.T) {
		s := Projection().Draw(t, "scenario")
		if err := s.Validate(); err != nil {
			t.Fatalf("invalid: %v", err)
		}
	})
}

// The generator reaches the faults the projection invariants are about, often
// enough for a hundred checks to meet each many times.
func TestProjectionReachesTheInterestingFaults(t *testing.T) {
	const n = 300
	counts := map[string]int{}
	for i := range n {
		p := Projection().Example(i).Projection
		emitter := map[string]string{}
		var crossNode, stepBack, minutesSkew, reordered, duplicated bool
		for _, n := range p.Nodes {
			minutesSkew = minutesSkew || n.SkewMs >= 60_000 || n.SkewMs <= -60_000
		}
		prevOf := map[string]string{} // order -> emitter of its latest event
		for _, st := range p.Steps {
			switch st.Op {
			case scenario.OpEmit:
				if last, ok := prevOf[st.Order]; ok && last != st.Node {
					crossNode = true
				}
				prevOf[st.Order] = st.Node
				emitter[st.ID] = st.Node
			case scenario.OpClockStep:
				stepBack = stepBack || st.Ms < 0
			}
		}
		for _, r := range p.Replicas {
			seen := map[string]bool{}
			last := -1
			for _, id := range r.Deliveries {
				duplicated = duplicated || seen[id]
				seen[id] = true
				k := projIndex(id)
				reordered = reordered || k < last
				last = k
			}
		}
		for name, hit := range map[string]bool{"cross-node chain": crossNode, "clock step back": stepBack, "skew of minutes": minutesSkew, "reordered delivery": reordered, "duplicate delivery": duplicated} {
			if hit {
				counts[name]++
			}
		}
	}
	for _, name := range []string{"cross-node chain", "clock step back", "skew of minutes", "reordered delivery", "duplicate delivery"} {
		if counts[name] < n/10 {
			t.Errorf("%s in %d of %d scenarios; want at least a tenth", name, counts[name], n)
		}
	}
	t.Logf("of %d scenarios: %v", n, counts)
}

// projIndex is the emission index in an id the generator made ("e7" -> 7).
func projIndex(id string) int {
	k := 0
	for _, c := range id[1:] {
		k = k*10 + int(c-'0')
	}
	return k
}
