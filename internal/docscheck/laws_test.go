package docscheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/internal/law"
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
				if doc == filepath.Join("docs", "changes.md") && law.Canonical(m[0]) != m[0] {
					continue // a rename, told under the law's former name
				}
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

// TestInvariantsMatchRegistry holds docs/invariants.md to the law registry
// (package internal/law): every law that must always hold has a row there,
// under its ID or its "property/law" name, with the registry's description
// word for word; and every row names a law of the registry by its current
// name.
func TestInvariantsMatchRegistry(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "docs", "invariants.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for i, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "|") || !strings.HasSuffix(line, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		name := ""
		for _, c := range cells {
			if m := tableName.FindStringSubmatch(strings.TrimSpace(c)); m != nil {
				name = m[1]
				break
			}
		}
		if name == "" {
			continue // a header, a separator, or a row of no law
		}
		l, ok := law.Lookup(name)
		switch {
		case !ok:
			t.Errorf("docs/invariants.md:%d: documents law %q, which the registry does not have", i+1, name)
			continue
		case law.Canonical(name) != name:
			t.Errorf("docs/invariants.md:%d: names law %q by its former name; it is %s", i+1, name, law.Canonical(name))
		case name != l.ID && name != l.Qualified():
			t.Errorf("docs/invariants.md:%d: names law %q, which the registry names %s", i+1, name, l.Qualified())
		}
		if doc := strings.TrimSpace(cells[len(cells)-1]); doc != l.Doc {
			t.Errorf("docs/invariants.md:%d: describes %s as\n\t%q\nthe registry as\n\t%q", i+1, name, doc, l.Doc)
		}
		documented[l.ID] = true
	}
	for _, l := range law.AlwaysLaws() {
		if !documented[l.ID] {
			t.Errorf("docs/invariants.md does not document law %s (%s)", l.Qualified(), l.Doc)
		}
	}
}

// tableName is a law's name alone in a table cell: `single-credit`,
// `nothing-lost/healthy-applied`.
var tableName = regexp.MustCompile("^`([a-z][a-z-]*(?:/[a-z][a-z-]*)?)`$")
