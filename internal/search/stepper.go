package search

// Stepper is a model whose states a breadth-first search holds: the
// strategy asks it for the state a path reaches (a model that cannot keep
// its states between two depths plays the path again), then for the step
// of each move of its menu the partial-order reduction leaves, and judges
// the transitions into new states. A transition T carries its Edge: the
// model fills in the key of the state reached, the moves that need not be
// taken from it (Skip), whether it broke a law on the way and whether it
// left its parent's state as it is (SelfLoop). X is a goroutine's scratch.
type Stepper[T Transition, X any] interface {
	// Moves is the size of the menu: moves are 0..Moves()-1.
	Moves() int
	// Scratch returns a goroutine's scratch, Release takes it back.
	Scratch() X
	Release(x X)
	// Transition returns the transition from parent (an index of the
	// depth expanded) by move, not yet taken.
	Transition(parent int32, move int16) T
	// Restore returns the state path reaches from the initial state, as a
	// transition (nil path: the initial state).
	Restore(x X, path []int16) (T, error)
	// Step takes t's move from parent, the state Restore returned.
	Step(x X, parent, t T) error
	// Drop lets go of a transition the search does not keep (a state
	// known, or a parent once stepped); it is called of transitions not
	// taken too, when the search ends on an error.
	Drop(t T)
	// Judge judges, in order, the transitions into new states and those
	// that broke a law; true when one breaks a law, which ends the search.
	Judge(ts []T, d int) bool
}

// RunStepper searches m breadth first, from its initial state, expanding
// each batch of the frontier on par goroutines.
func RunStepper[T Transition, X any](b *BFS, m Stepper[T, X], par int) error {
	x := m.Scratch()
	root, err := m.Restore(x, nil)
	m.Release(x)
	if err != nil {
		return err
	}
	e := root.Head()
	e.Parent, e.Move = -1, -1
	return Run(b, stepper[T, X]{b: b, m: m, par: par}, root)
}

// stepper is the Expander of a Stepper.
type stepper[T Transition, X any] struct {
	b   *BFS
	m   Stepper[T, X]
	par int
}

// Expand takes every move from the states lo..hi-1 of depth d-1 that
// their skip sets leave, each parent restored once, on every core.
func (s stepper[T, X]) Expand(d, lo, hi int) ([]T, int64, error) {
	var ts []T
	first := make([]int, 0, hi-lo+1)
	moves := s.m.Moves()
	for p := lo; p < hi; p++ {
		first = append(first, len(ts))
		skip := s.b.Nodes[d-1][p].Skip
		for mv := range moves {
			if skip&(1<<mv) != 0 {
				s.b.Skipped++
				continue
			}
			ts = append(ts, s.m.Transition(int32(p), int16(mv)))
		}
	}
	first = append(first, len(ts))
	errs := make([]error, hi-lo)
	Parallel(s.par, hi-lo, s.m.Scratch, s.m.Release, func(x X, i int) {
		cs := ts[first[i]:first[i+1]]
		if len(cs) == 0 {
			return
		}
		parent, err := s.m.Restore(x, s.b.Path(d-1, int32(lo+i)))
		if err != nil {
			errs[i] = err
			return
		}
		defer s.m.Drop(parent)
		for _, c := range cs {
			if err := s.m.Step(x, parent, c); err != nil && errs[i] == nil {
				errs[i] = err
			}
		}
	})
	for _, err := range errs {
		if err != nil {
			for _, t := range ts {
				s.m.Drop(t)
			}
			return nil, 0, err
		}
	}
	return ts, int64(len(ts)), nil
}

func (s stepper[T, X]) Keep(T, int) {}

func (s stepper[T, X]) Drop(t T) { s.m.Drop(t) }

func (s stepper[T, X]) Judge(ts []T, d int) bool { return s.m.Judge(ts, d) }

func (s stepper[T, X]) Closed(int) {}

// Path is the moves from the initial state to node i of depth d.
func (b *BFS) Path(d int, i int32) []int16 {
	path := make([]int16, d)
	for ; d > 0; d-- {
		n := b.Nodes[d][i]
		path[d-1] = n.Move
		i = n.Parent
	}
	return path
}
