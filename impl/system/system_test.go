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

func TestIsReference(t *testing.T) {
	if !IsReference(Reference().Consumption) {
		t.Fatal("the reference is not recognised as the reference")
	}
	for _, m := range Mutants() {
		if m.Consumption != nil && IsReference(m.Consumption) {
			t.Errorf("mutant %s taken for the reference", m.Name)
		}
	}
	other := WithStore("other", Reference().Consumption.NewStore)
	if !IsReference(other.Consumption) {
		t.Error("the reference over its own store constructor is the reference")
	}
	c := *Reference().Consumption
	c.Conventions.LeaseEnd = "inclusive"
	if IsReference(&c) || IsReference(nil) {
		t.Error("other conventions, or no parts, taken for the reference")
	}
}
