package docscheck

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// root is the repository root, seen from this package's directory.
var root = filepath.Join("..", "..")

// maxREADMELines is what a newcomer reads in five minutes.
const maxREADMELines = 300

// documents lists the pages the test reads, relative to the root: the
// README, cmd/fuzzrun's, docs/*.md, and every other markdown file outside
// testdata.
func documents(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md", filepath.Join("cmd", "fuzzrun", "README.md")}
	// The other documents of the tree: the examples' READMEs, the protocols,
	// the corpus format, the finding, the linearizability README.
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() || !strings.HasSuffix(rel, ".md") || rel == "README.md" || filepath.Dir(rel) == "docs" || rel == filepath.Join("cmd", "fuzzrun", "README.md") {
			return nil
		}
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		rel, err := filepath.Rel(root, d)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rel)
	}
	if len(docs) == 0 {
		t.Fatal("docs/ holds no page")
	}
	return out
}

func TestDocsREADMEIsShort(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > maxREADMELines {
		t.Errorf("README.md has %d lines, more than %d: move the depth into a page under docs/", n, maxREADMELines)
	}
}

// TestDocsPathsExist fails naming every repository path, relative link or
// documented package that does not exist.
func TestDocsPathsExist(t *testing.T) {
	idx := newIndex(t)
	for _, doc := range documents(t) {
		for _, p := range problems(t, idx, doc) {
			t.Error(p)
		}
	}
}

// index knows the tree: the top-level entries (a path is taken to be the
// repository's when its first element is one of them) and every file's base
// name (a bare file name is true when some file has it).
type index struct {
	top   map[string]bool
	bases map[string]bool
}

func newIndex(t *testing.T) *index {
	t.Helper()
	idx := &index{top: map[string]bool{}, bases: map[string]bool{}}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != ".git" {
			idx.top[e.Name()] = true
		}
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		idx.bases[d.Name()] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

var (
	fence      = regexp.MustCompile("^\\s*(```|~~~)")
	inlineCode = regexp.MustCompile("`([^`]+)`")
	link       = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// pathish is what a path may be made of.
	pathish = regexp.MustCompile(`^[A-Za-z0-9_.\-/]+$`)
	// fileExt names the kinds of file a bare name is taken to be a file of.
	fileExt = regexp.MustCompile(`\.(go|md|json|js|yml|yaml|sh|mod)$`)
	// goIdent is a trailing Go identifier, as in faults/runner.RunLive.
	goIdent = regexp.MustCompile(`\.[A-Za-z_][A-Za-z0-9_]*$`)
	// placeholder is a word standing for a value: NAME, FILE.
	placeholder = regexp.MustCompile(`(^|[/.:=])(NAME|FILE|DIR|COMMAND|ARG|SCHEME|TARGET|T|N|LAW|REASON|PKG|X|H|C|B)([/.:]|$)`)
)

// outputs are paths a run writes, named in the documentation before any
// run made them: the path, and what makes it.
var outputs = map[string]string{
	"corpus/brokers/consumers":     "corpus.BrokerConsumersDir, written by the first broker campaign of a team's consumer that fails",
	"report.json":                  "the nightly soak's artifact",
	"report.html":                  "the nightly soak's artifact",
	"fuzzrun-report.html":          "fuzzrun's default -html file",
	"certificate-NAME-i-of-N.json": "the default -certificate of fuzzrun consumer NAME -explore -shard i/N",
}

// readerPaths are paths of the reader's machine the documentation names:
// the path, and what it is.
var readerPaths = map[string]string{
	"../idemcheck": "the reader's checkout of idemcheck, beside the module of their own the README makes",
}

// scratchPackages are the package directories of the reader's module the
// snippets' markers make (see snippets_test.go): go test ./ledger names
// the README's ledger package, not one of the repository.
func scratchPackages(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, page := range snippetPages(t) {
		b, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		snips, _ := parseSnippets(page, string(b))
		for _, s := range snips {
			if s.path != "" {
				out[filepath.Dir(s.path)] = true
			}
		}
	}
	return out
}

// problems reads one page and returns what in it names nothing.
func problems(t *testing.T, idx *index, doc string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, doc))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dir := filepath.Dir(doc)
	scratch := scratchPackages(t)
	isPackage := func(p string) bool { return isPackage(p) || scratch[p] }
	var out []string
	seen := map[string]bool{}
	report := func(line int, format string, args ...any) {
		msg := fmt.Sprintf("%s:%d: ", doc, line) + fmt.Sprintf(format, args...)
		if !seen[msg] {
			seen[msg] = true
			out = append(out, msg)
		}
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	inFence, n := false, 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			// A code block may be output (paths of the reader's machine, a
			// saved file's name): only the packages its commands name are
			// checked.
			for _, pkg := range commandPackages(line) {
				if !isPackage(pkg) {
					report(n, "the command names package %s, which does not exist", pkg)
				}
			}
			continue
		}
		// An indented block is a command or its output.
		if strings.HasPrefix(line, "    ") && !strings.HasPrefix(strings.TrimSpace(line), "-") && !strings.HasPrefix(strings.TrimSpace(line), "|") {
			for _, pkg := range commandPackages(line) {
				if !isPackage(pkg) {
					report(n, "the command names package %s, which does not exist", pkg)
				}
			}
			continue
		}
		for _, m := range link.FindAllStringSubmatch(line, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			if anchor, ok := strings.CutPrefix(target, "#"); ok {
				if !hasAnchor(t, doc, anchor) {
					report(n, "the link %s names a heading %s has not", target, doc)
				}
				continue
			}
			target, anchor, _ := strings.Cut(target, "#")
			p := filepath.Join(dir, target)
			if !exists(p) {
				report(n, "the link %s resolves to nothing (%s)", m[1], p)
				continue
			}
			if anchor != "" && strings.HasSuffix(p, ".md") && !hasAnchor(t, p, anchor) {
				report(n, "the link %s names a heading %s has not", m[1], p)
			}
		}
		// Text outside code spans with links removed is prose; code spans
		// are where paths are named.
		for _, m := range inlineCode.FindAllStringSubmatch(line, -1) {
			code := m[1]
			for _, pkg := range commandPackages(code) {
				if !isPackage(pkg) {
					report(n, "the command names package %s, which does not exist", pkg)
				}
			}
			if isCommand(code) {
				continue
			}
			for _, field := range strings.Fields(code) {
				if p, ok := candidate(idx, field); ok && !existsAt(dir, p) {
					report(n, "%s names a path that does not exist", p)
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// candidate says whether a word of a code span is a repository path, and
// returns it cleaned.
func candidate(idx *index, field string) (string, bool) {
	field = strings.TrimRight(field, ",;:)")
	field = strings.TrimLeft(field, "(")
	if field == "" || strings.Contains(field, "://") || strings.Contains(field, "...") || strings.Contains(field, "…") {
		return "", false
	}
	if !pathish.MatchString(field) || placeholder.MatchString(field) {
		return "", false
	}
	if strings.HasPrefix(field, "./") || strings.HasPrefix(field, "../") {
		return field, true
	}
	if i := strings.Index(field, "/"); i > 0 {
		// A law (hlc-laws/monotonic), a subtest or an import path outside
		// the repository starts with something the root does not hold.
		if idx.top[field[:i]] {
			return field, true
		}
		return "", false
	}
	if fileExt.MatchString(field) {
		if !idx.bases[field] {
			return field, true // a bare file name no file has
		}
	}
	return "", false
}

// existsAt says whether a path exists from the root or from the page's
// directory, also read as a package followed by one of its identifiers.
func existsAt(dir, p string) bool {
	if outputs[strings.TrimSuffix(p, "/")] != "" || readerPaths[p] != "" {
		return true
	}
	try := func(p string) bool {
		return exists(p) || exists(filepath.Join(dir, p))
	}
	if try(p) {
		return true
	}
	if !fileExt.MatchString(p) {
		if trimmed := goIdent.ReplaceAllString(p, ""); trimmed != p && try(trimmed) {
			return true
		}
	}
	return false
}

// isPackage says whether a directory holds Go files (or is a .go file
// given to go run).
func isPackage(p string) bool {
	if strings.HasSuffix(p, ".go") {
		return exists(p)
	}
	files, _ := filepath.Glob(filepath.Join(root, p, "*.go"))
	return len(files) > 0
}

func exists(p string) bool {
	if !filepath.IsAbs(p) {
		p = filepath.Join(root, p)
	}
	_, err := os.Stat(p)
	return err == nil
}

// isCommand says whether a code span is a shell command.
func isCommand(code string) bool {
	for _, f := range strings.Fields(code) {
		if strings.Contains(f, "=") && !strings.HasPrefix(f, "-") {
			continue // an environment assignment
		}
		return f == "go" || f == "bash" || f == "node" || f == "time" || f == "/usr/bin/time"
	}
	return false
}

// commandPackages returns the local packages (./x/y) the go test, go run or
// go build commands of a line name, without the trailing /... of a pattern.
func commandPackages(line string) []string {
	var out []string
	fields := strings.Fields(line)
	for i := 0; i+1 < len(fields); i++ {
		if fields[i] != "go" {
			continue
		}
		switch fields[i+1] {
		case "test", "run", "build", "vet", "list":
		default:
			continue
		}
		for _, f := range fields[i+2:] {
			f = strings.Trim(f, "`'\",;()")
			if f == "|" || f == "&&" || f == "#" {
				break
			}
			if !strings.HasPrefix(f, "./") {
				continue
			}
			f = strings.TrimSuffix(strings.TrimSuffix(f, "/..."), "...")
			if f == "./" || f == "." || strings.ContainsAny(f, "*<>") || placeholder.MatchString(f) {
				continue
			}
			out = append(out, filepath.Clean(f))
		}
	}
	return out
}

// hasAnchor says whether a markdown page has a heading whose GitHub anchor
// is the one given.
func hasAnchor(t *testing.T, page, anchor string) bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, page))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range anchors(string(b)) {
		if a == anchor {
			return true
		}
	}
	return false
}

// anchors returns the GitHub anchors of a page's headings.
func anchors(page string) []string {
	var out []string
	count := map[string]int{}
	inFence := false
	for _, line := range strings.Split(page, "\n") {
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if c := count[a]; c > 0 {
			out = append(out, fmt.Sprintf("%s-%d", a, c))
		} else {
			out = append(out, a)
		}
		count[a]++
	}
	return out
}

// TestDocsCheckerCatches holds the checker to what it must flag and what it
// must leave alone, on a page of its own.
func TestDocsCheckerCatches(t *testing.T) {
	idx := newIndex(t)
	page := strings.Join([]string{
		"Real: `properties/property.go`, `faults/runner.RunLive`, [seams](seams.md), `go test ./properties`.",
		"Stale: `impl/pgstore`, `impl/redisstore/FINDING.md`, [gone](gone.md), `go test ./impl/sqlitestore`, `go test ./impl/contract`.",
		"## A heading",
		"Anchors: [here](#a-heading), [there](seams.md#a-claim-store-implcontractstorestore), [nowhere](#no-such-heading).",
		"Not paths: `hlc-laws/monotonic`, `github.com/x/y`, `corpus/NAME.json`, `dlq.<topic>`, `impl/*`, `idemcheck.js`.",
		"```",
		"saved testdata/consumertest/x.json",
		"go run ./nowhere",
		"```",
	}, "\n")
	// The page sits in docs/ so that its relative link resolves there.
	name := filepath.Join("docs", "zz-docscheck-selftest.md")
	if err := os.WriteFile(filepath.Join(root, name), []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(filepath.Join(root, name))
	got := problems(t, idx, name)
	want := []string{"impl/pgstore", "impl/redisstore/FINDING.md", "gone.md", "impl/sqlitestore", "package impl/contract,", "#no-such-heading", "nowhere"}
	joined := strings.Join(got, "\n")
	for _, w := range want {
		if !strings.Contains(joined, w) {
			t.Errorf("the checker does not flag %s; it reports:\n%s", w, joined)
		}
	}
	if len(got) != len(want) {
		t.Errorf("the checker reports %d problems, want %d:\n%s", len(got), len(want), joined)
	}
}
