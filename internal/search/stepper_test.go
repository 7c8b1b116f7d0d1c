package search

import (
	"errors"
	"sync/atomic"
	"testing"
)

// numberSteps is the numbers model as a Stepper: a state is restored by
// playing its path from 1 (add one, double, mod mod); move 1 is skipped
// after an odd number, and a state equal to bad breaks a law. Restore
// fails on a path of length failAt.
type numberSteps struct {
	mod, bad, failAt int
	open             atomic.Int64
	restored         atomic.Int64
}

func (m *numberSteps) Moves() int        { return 2 }
func (m *numberSteps) Scratch() struct{} { return struct{}{} }
func (m *numberSteps) Release(struct{})  {}
func (m *numberSteps) Transition(parent int32, move int16) *numberMove {
	return &numberMove{Edge: Edge{Parent: parent, Move: move}}
}

func (m *numberSteps) apply(n int, mv int16) int {
	if mv == 0 {
		return (n + 1) % m.mod
	}
	return n * 2 % m.mod
}

func (m *numberSteps) Restore(_ struct{}, path []int16) (*numberMove, error) {
	if len(path) == m.failAt {
		return nil, errors.New("cannot restore")
	}
	m.restored.Add(1)
	n := 1
	for _, mv := range path {
		n = m.apply(n, mv)
	}
	m.open.Add(1)
	return &numberMove{Edge: Edge{Key: Key{uint64(n), 7}}, n: n}, nil
}

func (m *numberSteps) Step(_ struct{}, parent, t *numberMove) error {
	t.n = m.apply(parent.n, t.Move)
	t.Key = Key{uint64(t.n), 7}
	t.SelfLoop = t.n == parent.n
	if t.n%2 == 1 {
		t.Skip = 1 << 1
	}
	if !t.SelfLoop {
		m.open.Add(1)
	}
	return nil
}

func (m *numberSteps) Drop(t *numberMove) {
	if t != nil && t.Key != (Key{}) && !t.SelfLoop {
		m.open.Add(-1)
	}
}

func (m *numberSteps) Judge(ts []*numberMove, _ int) bool {
	for _, t := range ts {
		m.Drop(t)
		if t.n == m.bad {
			return true
		}
	}
	return false
}

// TestStepperReachesEveryStateOnce: the breadth-first search of a Stepper
// restores each parent once per batch, skips what the skip sets say, and
// lets go of every state it does not keep.
func TestStepperReachesEveryStateOnce(t *testing.T) {
	m := &numberSteps{mod: 100, bad: -1, failAt: -1}
	b := &BFS{MaxDepth: 50, Batch: 3}
	if err := RunStepper(b, m, 2); err != nil {
		t.Fatal(err)
	}
	if b.States != 100 {
		t.Errorf("%d states, want the 100 numbers", b.States)
	}
	if b.Skipped == 0 {
		t.Error("no move skipped after an odd number")
	}
	// Every state is a parent once (the last depth's too, with nothing
	// new to reach) and the initial state is restored for the root.
	if got := m.restored.Load(); got != b.States+1 {
		t.Errorf("%d restores, want %d", got, b.States+1)
	}
	if n := m.open.Load(); n != 0 {
		t.Errorf("%d states not let go", n)
	}
}

// TestStepperStopsAtABreachOrAnError: a law broken ends the search at the
// depth it was reached; a state that cannot be restored is the search's
// error.
func TestStepperStopsAtABreachOrAnError(t *testing.T) {
	m := &numberSteps{mod: 100, bad: 8, failAt: -1}
	b := &BFS{MaxDepth: 50, Batch: 3}
	if err := RunStepper(b, m, 1); err != nil {
		t.Fatal(err)
	}
	// 1 -> 2 -> 4 -> 8.
	if last := b.Levels[len(b.Levels)-1]; last.Depth != 3 {
		t.Errorf("stopped at depth %d, want 3", last.Depth)
	}
	m = &numberSteps{mod: 100, bad: -1, failAt: 2}
	b = &BFS{MaxDepth: 50, Batch: 3}
	if err := RunStepper(b, m, 2); err == nil || err.Error() != "cannot restore" {
		t.Errorf("err = %v, want the restore's", err)
	}
}
