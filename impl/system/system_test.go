package system

import "testing"

func TestRegistry(t *testing.T) {
	ref := Reference()
	if ref.Mutant || ref.Consumption == nil || ref.Projection == nil {
		t.Fatalf("reference target incomplete: %+v", ref)
	}
	seen := map[string]bool{"reference": true}
	for _, m := range Mutants() {
		if seen[m.Name] {
			t.Fatalf("duplicate target name %s", m.Name)
		}
		seen[m.Name] = true
		if !m.Mutant || m.Bug == "" || m.KilledBy == "" || (m.Consumption == nil && m.Projection == nil) {
			t.Errorf("mutant %s incompletely described: %+v", m.Name, m)
		}
		if got, ok := Lookup(m.Name); !ok || got.Name != m.Name {
			t.Errorf("Lookup(%s) failed", m.Name)
		}
	}
	if _, ok := Lookup("nope"); ok {
		t.Fatal("Lookup of an unknown target succeeded")
	}
	if len(Mutants()) < 15 {
		t.Fatalf("only %d mutants registered", len(Mutants()))
	}
}
