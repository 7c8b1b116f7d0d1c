package explore

import (
	"fmt"
	"slices"

	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/properties"
)

// DeliveryOrders enumerates, breadth first, every delivery order of the
// events ids in which each event arrives at least once and at most
// maxCopies times (duplicates): the shortest orders first, orders of one
// length in the order of ids.
func DeliveryOrders(ids []string, maxCopies int) [][]string {
	if len(ids) == 0 || maxCopies < 1 {
		return nil
	}
	type partial struct {
		order  []string
		copies []int
	}
	var out [][]string
	level := []partial{{copies: make([]int, len(ids))}}
	for len(level) > 0 {
		var next []partial
		for _, p := range level {
			if !slices.Contains(p.copies, 0) {
				out = append(out, p.order)
			}
			for i, id := range ids {
				if p.copies[i] == maxCopies {
					continue
				}
				c := slices.Clone(p.copies)
				c[i]++
				next = append(next, partial{order: append(slices.Clip(p.order), id), copies: c})
			}
		}
		level = next
	}
	return out
}

// ProjectionResult is the outcome of ExploreProjection.
type ProjectionResult struct {
	// Orders is the number of delivery orders judged.
	Orders int
	// Counterexample is a scenario with a shortest failing delivery order
	// (nil: every order passed).
	Counterexample *scenario.Scenario
	// Verdict is its failing verdict, and Outcome its run.
	Verdict properties.Verdict
	Outcome *runner.Outcome
}

// ExploreProjection judges the causal history of p (its nodes and steps;
// its replicas are ignored) under every delivery order of the emitted
// events with up to maxCopies copies each (DeliveryOrders), by the
// projection properties props (nil: all of them). Every order is a
// replica of one scenario, judged at once, beside an in-order replica that
// receives each event once; when that fails, the orders are judged one by
// one, shortest first, and the first that fails is the counterexample.
func ExploreProjection(target system.Target, p *scenario.Projection, maxCopies int, props []properties.Property) (*ProjectionResult, error) {
	if target.Projection == nil {
		return nil, fmt.Errorf("%w: target %q has no projection parts", ErrBounds, target.Name)
	}
	if maxCopies < 1 || maxCopies > scenario.MaxCopies {
		return nil, fmt.Errorf("%w: %d copies; need 1..%d", ErrBounds, maxCopies, scenario.MaxCopies)
	}
	if props == nil {
		props = properties.ForKind(scenario.KindProjection)
	}
	var ids []string
	for _, st := range p.Steps {
		if st.Op == scenario.OpEmit {
			ids = append(ids, st.ID)
		}
	}
	orders := DeliveryOrders(ids, maxCopies)
	if len(orders) == 0 {
		return nil, fmt.Errorf("%w: the history emits no event", ErrBounds)
	}
	build := func(orders ...[]string) *scenario.Scenario {
		q := *p
		q.Replicas = []scenario.Replica{{Name: "in-order", Deliveries: ids}}
		for i, o := range orders {
			q.Replicas = append(q.Replicas, scenario.Replica{Name: fmt.Sprintf("r%d", i+1), Deliveries: o})
		}
		return &scenario.Scenario{Version: scenario.Version, Kind: scenario.KindProjection, Projection: &q}
	}
	res := &ProjectionResult{Orders: len(orders)}
	all := build(orders...)
	if err := all.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBounds, err)
	}
	allOut, vs, err := properties.Judge(all, target, props)
	if err != nil {
		return nil, err
	}
	if len(properties.Failed(vs)) == 0 {
		return res, nil
	}
	for _, o := range orders {
		s := build(o)
		out, vs, err := properties.Judge(s, target, props)
		if err != nil {
			return nil, err
		}
		if f := properties.Failed(vs); len(f) > 0 {
			res.Counterexample, res.Verdict, res.Outcome = s, f[0], out
			return res, nil
		}
	}
	// Only the orders together fail (replicas diverging from each other):
	// the whole set is the counterexample.
	res.Counterexample, res.Verdict, res.Outcome = all, properties.Failed(vs)[0], allOut
	return res, nil
}
