package situation_test

import (
	"regexp"
	"testing"

	"github.com/idemcheck/idemcheck/internal/situation"
)

var kebab = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// Every situation is kebab-case, described once, and named once per kind.
func TestRegistryNamesAreKebabAndUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range situation.All() {
		if !kebab.MatchString(s.Name) {
			t.Errorf("situation %q is not kebab-case", s.Name)
		}
		if s.Doc == "" {
			t.Errorf("situation %q has no description", s.Name)
		}
		k := string(s.Kind) + "/" + s.Name
		if seen[k] {
			t.Errorf("situation %s is registered twice", k)
		}
		seen[k] = true
	}
	if len(situation.Required(situation.KindConsumer)) == 0 || len(situation.Runner()) == 0 {
		t.Fatal("the registry has no consumer or no runner situations")
	}
}
