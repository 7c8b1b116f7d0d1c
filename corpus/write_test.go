package corpus_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/idemcheck/idemcheck/corpus"
)

func TestWriteCreatesNamedFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cases") // created on demand
	c := smallCase()
	path, created, err := corpus.Write(dir, c)
	if err != nil || !created {
		t.Fatalf("created=%t err=%v", created, err)
	}
	name, _ := corpus.Name(c.Property, c.Scenario)
	if filepath.Base(path) != name || !strings.HasPrefix(name, "single-credit-") {
		t.Fatalf("path %s, want name %s", path, name)
	}
	got, err := corpus.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Target != c.Target || got.Scenario.Size() != c.Scenario.Size() {
		t.Fatalf("loaded %+v", got)
	}
	info, _ := os.Stat(path)
	if info.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v, want 0644: corpus files are shared", info.Mode().Perm())
	}
	assertOnly(t, dir, name)
}

// A second save of the same scenario never overwrites the first, even when
// everything around the scenario differs.
func TestWriteNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	first := smallCase()
	path, _, err := corpus.Write(dir, first)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	second := smallCase()
	second.Target, second.Summary, second.Seed = "reference", "other", 7
	path2, created, err := corpus.Write(dir, second)
	if err != nil || created || path2 != path {
		t.Fatalf("second write: path %s created=%t err=%v", path2, created, err)
	}
	after, _ := os.ReadFile(path)
	if string(before) != string(after) {
		t.Fatal("the existing file changed")
	}
	assertOnly(t, dir, filepath.Base(path))
}

// The same scenario violating a second property is the same case: it is
// not saved again under the other property's name.
func TestWriteKnowsScenarioUnderAnyProperty(t *testing.T) {
	dir := t.TempDir()
	first, _, err := corpus.Write(dir, smallCase())
	if err != nil {
		t.Fatal(err)
	}
	other := smallCase()
	other.Property = "atomicity"
	path, created, err := corpus.Write(dir, other)
	if err != nil || created || path != first {
		t.Fatalf("path %s created=%t err=%v, want the existing %s", path, created, err, first)
	}
	assertOnly(t, dir, filepath.Base(first))
}

// Campaigns racing to save the same counterexample create it exactly once.
func TestWriteRaceCreatesOnce(t *testing.T) {
	dir := t.TempDir()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		created int
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, ok, err := corpus.Write(dir, smallCase())
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				created++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if created != 1 {
		t.Fatalf("%d writers created the file, want 1", created)
	}
	name, _ := corpus.Name("single-credit", smallCase().Scenario)
	assertOnly(t, dir, name)
}

// The name depends on the scenario only.
func TestNameIsContentHash(t *testing.T) {
	a, b := smallCase(), smallCase()
	b.Scenario.Consumption.Steps[3].Ms = 201
	na, _ := corpus.Name("p", a.Scenario)
	nb, _ := corpus.Name("p", b.Scenario)
	na2, _ := corpus.Name("p", smallCase().Scenario)
	if na == nb || na != na2 {
		t.Fatalf("names %s %s %s", na, nb, na2)
	}
	if n, _ := corpus.Name("a/b c", a.Scenario); strings.ContainsAny(n, "/ ") {
		t.Fatalf("unsafe name %q", n)
	}
}

// assertOnly fails unless dir holds exactly the named file: no temporary
// file is left behind.
func assertOnly(t *testing.T, dir, name string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 1 || names[0] != name {
		t.Fatalf("dir holds %v, want only %s", names, name)
	}
}
