package explore

import (
	"slices"
	"testing"

	"github.com/idemcheck/idemcheck/faults/scenario"
)

// The full menu is the reference world's ops of the vocabulary's table,
// each once.
func TestFullMenuIsTheTables(t *testing.T) {
	var want []string
	for _, op := range scenario.OpsOf(scenario.WorldReference) {
		want = append(want, string(op))
	}
	got := slices.Clone(FullMenu)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("full menu %v, the table's reference ops %v", got, want)
	}
}

// A menu may name run by its old spelling, step: the same steps; naming
// both is naming one op twice.
func TestMenuReadsStepAsRun(t *testing.T) {
	base, err := tiny.Scenario()
	if err != nil {
		t.Fatal(err)
	}
	old, err := Steps(base, []string{"produce", "step"})
	if err != nil {
		t.Fatal(err)
	}
	now, err := Steps(base, []string{"produce", "run"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(old, now) || !slices.ContainsFunc(now, func(s scenario.Step) bool { return s.Op == scenario.OpRun }) {
		t.Fatalf("step gives %v, run %v", old, now)
	}
	if _, err := Steps(base, []string{"run", "step"}); err == nil {
		t.Fatal("run and step listed together: no error")
	}
}

// A menu given on the command line names run by its current name, however
// it was spelled.
func TestParseMenuNamesRun(t *testing.T) {
	if got := ParseMenu("produce, step,advance:5"); !slices.Equal(got, []string{"produce", "run", "advance:5"}) {
		t.Fatalf("ParseMenu: %v", got)
	}
}
