package consumertest_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strings"
	"testing"
)

// maxFrontDoor bounds the names package consumertest exports. The front
// door holds what a team calls from its tests; the scenario vocabulary,
// the handler's contract and the laws live in the subpackages, and the
// rest of the harness in internal/consumerharness. A name that would push
// the count over belongs in one of those.
const maxFrontDoor = 30

// Every exported const, var, type and function at the package's top level
// counts (methods and struct fields do not): the package is parsed, not
// its documentation read, so that no name escapes by being undocumented.
func TestFrontDoorStaysSmall(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		if f.Name.Name != "consumertest" {
			t.Fatalf("%s is of package %s", e.Name(), f.Name.Name)
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		t.Fatal("no file of package consumertest here")
	}
	var names []string
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() {
					names = append(names, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							names = append(names, s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								names = append(names, n.Name)
							}
						}
					}
				}
			}
		}
	}
	slices.Sort(names)
	if len(names) > maxFrontDoor {
		t.Errorf("package consumertest exports %d names, more than %d: %s", len(names), maxFrontDoor, strings.Join(names, " "))
	}
	for _, want := range []string{"Consumer", "Check", "Hunt", "Fuzz", "Replay", "Verify", "Explore", "Bounds", "Result", "VerifyResult", "Option"} {
		if !slices.Contains(names, want) {
			t.Errorf("package consumertest does not export %s: %s", want, strings.Join(names, " "))
		}
	}
}
