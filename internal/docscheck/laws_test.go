package docscheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/properties"
)

// lawRef is a property/law name as the documentation writes it.
var lawRef = regexp.MustCompile(`\b([a-z][a-z-]*[a-z])/([a-z][a-z-]*[a-z])\b`)

// TestDocsLawsExist fails naming every property/law the documentation
// names that no property has, and every property or law that
// docs/invariants.md does not list.
func TestDocsLawsExist(t *testing.T) {
	laws := map[string]map[string]bool{}
	for _, p := range properties.All() {
		laws[p.Name] = map[string]bool{}
		for _, l := range p.Laws {
			laws[p.Name][l.Name] = true
		}
	}
	for _, doc := range documents(t) {
		b, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range lawRef.FindAllStringSubmatch(line, -1) {
				if known, ok := laws[m[1]]; ok && !known[m[2]] {
					t.Errorf("%s:%d: %s names law %q, which property %s does not have", doc, i+1, m[0], m[2], m[1])
				}
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(root, "docs", "invariants.md"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, p := range properties.All() {
		if !strings.Contains(page, "`"+p.Name+"`") {
			t.Errorf("docs/invariants.md does not list property %s", p.Name)
		}
		for _, l := range p.Laws {
			if !strings.Contains(page, "`"+p.Name+"/"+l.Name+"`") {
				t.Errorf("docs/invariants.md does not list law %s/%s", p.Name, l.Name)
			}
		}
	}
}
