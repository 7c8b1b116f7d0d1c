package docscheck

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/faults/scenario"
)

// vocabularyMarks enclose, in docs/architecture.md, the copy of the
// scenario vocabulary's table.
const (
	vocabularyOpen  = "<!-- vocabulary: faults/scenario.Vocabulary -->"
	vocabularyClose = "<!-- /vocabulary -->"
)

// vocabularyTable renders scenario.Vocabulary as the docs show it.
func vocabularyTable() string {
	var b strings.Builder
	b.WriteString("| op | meaning | reference | consumer |\n|---|---|---|---|\n")
	mark := func(t scenario.Term, w scenario.World) string {
		if t.Plays(w) {
			return "yes"
		}
		return "—"
	}
	for _, t := range scenario.Vocabulary() {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", t.Op, t.Meaning, mark(t, scenario.WorldReference), mark(t, scenario.WorldConsumer))
	}
	return b.String()
}

// docs/architecture.md shows the scenario vocabulary as the code defines
// it, and corpus/FORMAT.md's table of a reference scenario's ops lists
// the ops the vocabulary gives the reference world, under their names.
func TestVocabularyDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), vocabularyOpen+"\n")
	if !ok {
		t.Fatalf("docs/architecture.md has no %s", vocabularyOpen)
	}
	got, _, ok := strings.Cut(rest, vocabularyClose)
	if !ok {
		t.Fatalf("docs/architecture.md has no %s", vocabularyClose)
	}
	if want := vocabularyTable(); got != want {
		t.Fatalf("docs/architecture.md's vocabulary table is not faults/scenario.Vocabulary's; want\n%s", want)
	}

	format, err := os.ReadFile(filepath.Join(root, "corpus", "FORMAT.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rows, ok := strings.Cut(string(format), "| op | fields | what happens |\n|---|---|---|\n")
	if !ok {
		t.Fatal("corpus/FORMAT.md has no table of ops")
	}
	rows, _, _ = strings.Cut(rows, "\n\n")
	var listed []string
	for _, row := range strings.Split(rows, "\n") {
		op, _, _ := strings.Cut(strings.TrimPrefix(row, "| `"), "`")
		listed = append(listed, op)
	}
	var want []string
	for _, op := range scenario.OpsOf(scenario.WorldReference) {
		want = append(want, string(op))
	}
	slices.Sort(listed)
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Fatalf("corpus/FORMAT.md lists the ops %v; the vocabulary gives the reference world %v", listed, want)
	}
}
