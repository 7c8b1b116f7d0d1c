package law_test

import (
	"maps"
	"regexp"
	"slices"
	"testing"

	"github.com/idemcheck/idemcheck/explore/compact"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/internal/consumerharness"
	"github.com/idemcheck/idemcheck/internal/law"
	"github.com/idemcheck/idemcheck/properties"
)

var kebab = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// Every law is kebab-case, described once, has a mode and a need, and is
// named once: no ID, qualified name or alias of one law is another's, so
// that a name always means one idea. A law of a property names a property.
func TestRegistryNamesAreKebabAndUnique(t *testing.T) {
	seen := map[string]string{}
	claim := func(name, by string) {
		if other, ok := seen[name]; ok {
			t.Errorf("%q names both %s and %s", name, other, by)
		}
		seen[name] = by
	}
	for _, l := range law.All() {
		if !kebab.MatchString(l.ID) {
			t.Errorf("law %q is not kebab-case", l.ID)
		}
		if l.Doc == "" || l.Mode == 0 || l.Needs == 0 {
			t.Errorf("law %q lacks its description, mode or needs: %+v", l.ID, l)
		}
		claim(l.ID, l.ID)
		if l.Qualified() != l.ID {
			claim(l.Qualified(), l.ID)
		}
		for _, a := range l.Aliases {
			claim(a, l.ID)
		}
		if l.Property != "" {
			p, ok := law.Lookup(l.Property)
			if !ok || p.Property != "" || p.Mode != law.Always {
				t.Errorf("law %s belongs to %q, which is no property of the registry", l.ID, l.Property)
			}
		}
	}
	if len(law.Situations()) == 0 || len(law.AlwaysLaws()) == 0 {
		t.Fatal("the registry has no Always or no Sometimes laws")
	}
	for _, l := range law.Situations() {
		if l.Mode != law.Sometimes {
			t.Errorf("situation %s is not a Sometimes law", l.ID)
		}
	}
}

// A former name reads as the current one, alone or in a "property/law".
func TestCanonicalReadsFormerNames(t *testing.T) {
	for in, want := range map[string]string{
		"healthy-credited":              law.HealthyApplied,
		"nothing-lost/healthy-credited": "nothing-lost/healthy-applied",
		"nothing-lost/credited-or-dlq":  "nothing-lost/credited-or-dlq",
		"single-credit":                 law.SingleCredit,
		"":                              "",
	} {
		if got := law.Canonical(in); got != want {
			t.Errorf("Canonical(%q) = %q, want %q", in, got, want)
		}
	}
	if l, ok := law.Lookup("nothing-lost/healthy-credited"); !ok || l.ID != law.HealthyApplied {
		t.Errorf("Lookup of the former name = %+v, %v", l, ok)
	}
}

// The reference world's properties are the registry's: each property is
// registered with the registry's description, and its laws are the
// registry's laws of that property, in order, with their descriptions.
func TestPropertiesAreTheRegistrys(t *testing.T) {
	for _, p := range properties.All() {
		l, ok := law.Lookup(p.Name)
		if !ok || l.Property != "" {
			t.Errorf("property %s is not a property of the registry", p.Name)
			continue
		}
		if p.Doc != l.Doc {
			t.Errorf("property %s is described %q, the registry says %q", p.Name, p.Doc, l.Doc)
		}
		var want []properties.Law
		for _, sub := range law.Of(p.Name) {
			want = append(want, properties.Law{Name: sub.ID, Doc: sub.Doc})
		}
		if !slices.Equal(p.Laws, want) {
			t.Errorf("property %s has laws %v, the registry %v", p.Name, p.Laws, want)
		}
	}
	// Every property of the registry with laws is judged by package
	// properties.
	for _, l := range law.AlwaysLaws() {
		if l.Property != "" || len(law.Of(l.ID)) == 0 {
			continue
		}
		if _, ok := properties.ByName(l.ID); !ok {
			t.Errorf("registry property %s has laws but package properties does not judge it", l.ID)
		}
	}
}

// The judges that see only a black box (a team's consumer under
// consumertest, a live broker's history) judge only laws that need no
// more than a black box.
func TestBlackBoxJudgesJudgeBlackBoxLaws(t *testing.T) {
	for what, ids := range map[string][]string{
		"consumertest": consumerharness.Laws,
		"live":         properties.LiveInvariants(),
	} {
		for _, id := range ids {
			l, ok := law.Lookup(id)
			switch {
			case !ok:
				t.Errorf("%s judges %q, which the registry does not have", what, id)
			case l.Needs != law.BlackBox:
				t.Errorf("%s judges %s, which needs %s", what, id, l.Needs)
			case l.Mode != law.Always:
				t.Errorf("%s judges %s, which is a %s law", what, id, l.Mode)
			}
			if consumerharness.LawDoc(id) != "" && consumerharness.LawDoc(id) != l.Doc {
				t.Errorf("consumertest describes %s otherwise than the registry", id)
			}
		}
	}
}

// The compact model's laws and the mutants' killers are the registry's.
func TestCompactLawsAndKillersAreRegistered(t *testing.T) {
	for i, names := range compact.Laws {
		if compact.Law(i) == compact.LawNone {
			continue
		}
		l, ok := law.Lookup(names[1])
		if !ok || l.Property != names[0] {
			t.Errorf("compact law %s is not a law of %s in the registry", compact.Law(i), names[0])
		}
	}
	for _, m := range system.Mutants() {
		if l, ok := law.Lookup(m.KilledBy); !ok || l.Property != "" {
			t.Errorf("mutant %s is killed by %q, which is no property of the registry", m.Name, m.KilledBy)
		}
	}
}

// A dead-letter entry excuses its event only when it is for spent attempts
// and the consumer gave up on none of its message's deliveries.
func TestExcused(t *testing.T) {
	dlq := []broker.DLQEntry{
		{Group: "g", Key: "e1", Offset: 0},               // the harness's faults spent it
		{Group: "g", Key: "e2", Offset: 1},               // the consumer gave up by itself
		{Group: "g", Key: "e3", Offset: 2, Poison: true}, // poison: never excused
		{Group: "h", Key: "e2", Offset: 1},               // another group's copy, faulted
	}
	got := law.Excused(dlq, func(group string, offset int64) bool { return group == "g" && offset == 1 })
	want := map[law.GroupKey]bool{{Group: "g", Key: "e1"}: true, {Group: "h", Key: "e2"}: true}
	if !maps.Equal(got, want) {
		t.Errorf("Excused = %v, want %v", got, want)
	}
}
