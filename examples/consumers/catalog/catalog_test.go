package catalog_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/scenario"
	"github.com/idemcheck/idemcheck/corpus"
	"github.com/idemcheck/idemcheck/examples/consumers/catalog"
)

const corpusDir = "../../../corpus/consumers"

// TestConsumerCorpusReplays plays every consumer-level case of
// corpus/consumers: it must still break its law against the consumer it
// was found against, and every correct example must pass it.
func TestConsumerCorpusReplays(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(corpusDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no consumer-level cases in %s: %v", corpusDir, err)
	}
	caught := map[string]bool{}
	for _, f := range files {
		c, err := corpus.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		if !c.IsConsumer() {
			t.Fatalf("%s: not a consumer-level case", f)
		}
		s, err := scenario.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		target, ok := catalog.Lookup(c.Target)
		if !ok {
			t.Fatalf("%s: target %q is not an example consumer", f, c.Target)
		}
		res, err := consumertest.Replay(target.Consumer, s, target.Options()...)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Failed || !breaks(res, c.Law) {
			t.Errorf("%s: %s no longer breaks %s:\n%s", f, c.Target, c.Law, res.Report())
		}
		caught[c.Target] = true
		for _, e := range catalog.All() {
			if !e.Correct() {
				continue
			}
			res, err := consumertest.Replay(e.Consumer, s, e.Options()...)
			if err != nil {
				t.Fatal(err)
			}
			if res.Failed {
				t.Errorf("%s: the correct consumer %s is flagged:\n%s", f, e.Name, res.Report())
			}
		}
	}
	for _, e := range catalog.All() {
		if !e.Correct() && !caught[e.Name] {
			t.Errorf("broken example %s has no case in %s (go run ./cmd/fuzzrun consumer %s)", e.Name, corpusDir, e.Name)
		}
	}
}

func breaks(res consumertest.Result, law string) bool {
	for _, b := range res.Breaches {
		if b.Law == law {
			return true
		}
	}
	return false
}

// TestCatalogNamesAreUnique guards -consumer NAME and the corpus file
// names, the log examples' among them.
func TestCatalogNamesAreUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range append(catalog.All(), catalog.Logs()...) {
		if seen[e.Name] || e.Consumer.Name != e.Name || e.Doc == "" {
			t.Errorf("entry %q: duplicate, misnamed or undocumented", e.Name)
		}
		seen[e.Name] = true
	}
	if _, err := os.Stat(corpusDir); err != nil {
		t.Fatal(err)
	}
}
