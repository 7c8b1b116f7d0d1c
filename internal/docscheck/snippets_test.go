package docscheck

import (
	"bufio"
	"fmt"
	"go/format"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The Go snippets of the README and of docs/*.md compile, and the tests
// among them that are cheap run, in a module of a reader's own, made the
// way the README makes it. See doc.go for the markers that say what each
// ```go block is.

// snippetPages are the pages whose ```go blocks are compiled: the README
// first (its files are the newcomer's module, which the other pages'
// snippets may use), then docs/*.md in name order.
func snippetPages(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md"}
	for _, d := range docs {
		rel, err := filepath.Rel(root, d)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rel)
	}
	return out
}

// snippet is one ```go block and what its marker says of it, or a marker
// that stands alone (stand-in, setup).
type snippet struct {
	page string
	// line is the page's line of the block's first line (of the marker's
	// body for a stand-in).
	line int
	// verb is the marker's: file, append, wrap, same, stand-in, setup.
	verb string
	// path is the file of the scratch module the block makes or goes to.
	path string
	// run says the block's tests run.
	run bool
	// code is the block; body the marker's own lines (wrap: the file
	// around the block; stand-in: the file; setup: the commands).
	code, body string
	// bodyLine is the page's line of body's first line.
	bodyLine int
}

// snippetPlaceholder is the line of a wrap marker's file the block goes in.
const snippetPlaceholder = "{{snippet}}"

var markerStart = regexp.MustCompile(`^\s*<!--\s*docscheck:\s*(.*)$`)

// parseSnippets reads the markers and the ```go blocks of a page's text;
// problems are what breaks the convention.
func parseSnippets(page, text string) (out []snippet, problems []string) {
	lines := strings.Split(text, "\n")
	bad := func(n int, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("%s:%d: ", page, n+1)+fmt.Sprintf(format, args...))
	}
	var pending *snippet
	inFence := false
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trimmed := strings.TrimSpace(line)
		if fence.MatchString(line) {
			if inFence {
				inFence = false
				continue
			}
			inFence = true
			if trimmed != "```go" {
				if pending != nil {
					bad(i, "the docscheck marker of line %d is followed by a block that is not ```go", pending.line)
					pending = nil
				}
				continue
			}
			start := i + 1
			j := start
			for j < len(lines) && !fence.MatchString(lines[j]) {
				j++
			}
			code := strings.Join(lines[start:j], "\n") + "\n"
			i = j
			inFence = false
			if pending == nil {
				bad(start-1, "a ```go block with no docscheck marker before it: say what it is (internal/docscheck/doc.go)")
				continue
			}
			pending.code, pending.line = code, start+1
			out = append(out, *pending)
			pending = nil
			continue
		}
		if inFence {
			continue
		}
		m := markerStart.FindStringSubmatch(line)
		if m == nil {
			if trimmed != "" && pending != nil {
				bad(i, "the docscheck marker of line %d is not followed by a ```go block", pending.line)
				pending = nil
			}
			continue
		}
		if pending != nil {
			bad(i, "the docscheck marker of line %d is not followed by a ```go block", pending.line)
			pending = nil
		}
		head, closed := strings.CutSuffix(strings.TrimSpace(m[1]), "-->")
		var body []string
		markerLine, bodyLine := i+1, i+2
		if !closed {
			j := i + 1
			for j < len(lines) && strings.TrimSpace(lines[j]) != "-->" {
				body = append(body, lines[j])
				j++
			}
			if j == len(lines) {
				bad(i, "a docscheck marker that never ends (a line holding only --> ends it)")
				return out, problems
			}
			i = j
		}
		words := strings.Fields(head)
		if len(words) == 0 {
			bad(i, "an empty docscheck marker")
			continue
		}
		s := snippet{page: page, line: markerLine, verb: words[0], body: strings.Join(body, "\n") + "\n", bodyLine: bodyLine}
		args := words[1:]
		if len(args) > 0 && args[len(args)-1] == "run" {
			s.run, args = true, args[:len(args)-1]
		}
		switch s.verb {
		case "setup":
			// The commands are the indented block that follows.
			if len(args) > 0 || len(body) > 0 {
				bad(i, "docscheck: setup takes nothing; the indented block after it holds the commands")
			}
			var cmds []string
			j := i + 1
			for j < len(lines) && strings.TrimSpace(lines[j]) == "" {
				j++
			}
			s.bodyLine = j + 1
			for j < len(lines) && strings.HasPrefix(lines[j], "    ") {
				cmds = append(cmds, strings.TrimSpace(lines[j]))
				j++
			}
			if len(cmds) == 0 {
				bad(i, "docscheck: setup is followed by no indented block of commands")
			}
			s.body = strings.Join(cmds, "\n") + "\n"
			out = append(out, s)
			i = j - 1
			continue
		case "file", "append", "wrap", "same", "stand-in":
		default:
			bad(i, "docscheck: %q is not a marker (file, append, wrap, same, stand-in, setup)", s.verb)
			continue
		}
		if len(args) != 1 {
			bad(i, "docscheck: %s takes one path of the scratch module (and run)", s.verb)
			continue
		}
		s.path = args[0]
		if filepath.IsAbs(s.path) || s.path != filepath.Clean(s.path) || strings.HasPrefix(s.path, "..") || !strings.HasSuffix(s.path, ".go") {
			bad(i, "docscheck: %s is not a clean relative path of a .go file", s.path)
			continue
		}
		switch s.verb {
		case "wrap":
			if !slices.ContainsFunc(strings.Split(s.body, "\n"), func(l string) bool { return strings.TrimSpace(l) == snippetPlaceholder }) {
				bad(i, "docscheck: wrap %s: the file around the block holds no line %s", s.path, snippetPlaceholder)
				continue
			}
		case "stand-in":
			if strings.TrimSpace(s.body) == "" {
				bad(i, "docscheck: stand-in %s: no file follows", s.path)
				continue
			}
			out = append(out, s)
			continue
		default:
			if len(body) > 0 {
				bad(i, "docscheck: %s takes no lines of its own", s.verb)
			}
		}
		pending = &s
	}
	if pending != nil {
		bad(len(lines)-1, "the docscheck marker of line %d is not followed by a ```go block", pending.line)
	}
	return out, problems
}

// segment maps lines of a scratch file back to a page.
type segment struct {
	from, to int // lines of the scratch file, from 1, to excluded
	page     string
	pageLine int // the page's line of the file's line from
}

// scratchFile is a file of the scratch module as the markers make it.
type scratchFile struct {
	text     string
	segments []segment
	// blocks are the ```go blocks that went into it, for same.
	blocks []snippet
}

func (f *scratchFile) add(text, page string, pageLine int) {
	from := strings.Count(f.text, "\n") + 1
	f.text += text
	f.segments = append(f.segments, segment{from: from, to: strings.Count(f.text, "\n") + 1, page: page, pageLine: pageLine})
}

// buildFiles makes the scratch module's files from the snippets: files,
// wraps and stand-ins first, in page order, then appends, then the check
// of each same.
func buildFiles(snips []snippet) (files map[string]*scratchFile, order []string, problems []string) {
	files = map[string]*scratchFile{}
	where := func(s snippet) string { return fmt.Sprintf("%s:%d", s.page, s.line) }
	create := func(s snippet) *scratchFile {
		if f, ok := files[s.path]; ok {
			problems = append(problems, fmt.Sprintf("%s: docscheck: %s %s: the file is made already, by %s", where(s), s.verb, s.path, where(f.blocks[0])))
			return nil
		}
		f := &scratchFile{}
		files[s.path] = f
		order = append(order, s.path)
		return f
	}
	for _, s := range snips {
		switch s.verb {
		case "file":
			if f := create(s); f != nil {
				f.add(s.code, s.page, s.line)
				f.blocks = append(f.blocks, s)
			}
		case "stand-in":
			if f := create(s); f != nil {
				f.add(s.body, s.page, s.bodyLine)
				f.blocks = append(f.blocks, s)
			}
		case "wrap":
			f := create(s)
			if f == nil {
				continue
			}
			f.blocks = append(f.blocks, s)
			around := strings.Split(strings.TrimSuffix(s.body, "\n"), "\n")
			for k, l := range around {
				if strings.TrimSpace(l) == snippetPlaceholder {
					indent := l[:strings.Index(l, snippetPlaceholder)]
					var b strings.Builder
					for _, cl := range strings.Split(strings.TrimSuffix(s.code, "\n"), "\n") {
						if cl != "" {
							b.WriteString(indent)
						}
						b.WriteString(cl + "\n")
					}
					f.add(b.String(), s.page, s.line)
					continue
				}
				f.add(l+"\n", s.page, s.bodyLine+k)
			}
		}
	}
	for _, s := range snips {
		if s.verb != "append" {
			continue
		}
		f, ok := files[s.path]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: docscheck: append %s: no block makes that file", where(s), s.path))
			continue
		}
		f.add("\n", s.page, s.line)
		f.add(s.code, s.page, s.line)
		f.blocks = append(f.blocks, s)
	}
	for _, s := range snips {
		if s.verb != "same" {
			continue
		}
		f, ok := files[s.path]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: docscheck: same %s: no block makes that file", where(s), s.path))
			continue
		}
		if !slices.ContainsFunc(f.blocks, func(b snippet) bool {
			return b.verb != "stand-in" && strings.TrimSpace(b.code) == strings.TrimSpace(s.code)
		}) {
			var of []string
			for _, b := range f.blocks {
				of = append(of, where(b))
			}
			problems = append(problems, fmt.Sprintf("%s: docscheck: same %s: the block differs from every block of that file (%s); keep them the same",
				where(s), s.path, strings.Join(of, ", ")))
		}
	}
	return files, order, problems
}

// testFunc is a test or fuzz test a snippet declares.
var testFunc = regexp.MustCompile(`(?m)^func ((?:Test|Fuzz)[A-Z0-9_]\w*)\(`)

// toRun lists, by package directory, the tests of the snippets marked run.
func toRun(snips []snippet, files map[string]*scratchFile) map[string][]string {
	out := map[string][]string{}
	for _, s := range snips {
		if !s.run {
			continue
		}
		code := s.code
		if s.verb == "wrap" {
			code = files[s.path].text
		}
		dir := "./" + filepath.ToSlash(filepath.Dir(s.path))
		for _, m := range testFunc.FindAllStringSubmatch(code, -1) {
			if !slices.Contains(out[dir], m[1]) {
				out[dir] = append(out[dir], m[1])
			}
		}
	}
	return out
}

// pageRef rewrites the scratch module's file:line positions in out into
// the pages' lines.
func pageRef(out string, files map[string]*scratchFile) string {
	pos := regexp.MustCompile(`([\w./-]+\.go):(\d+)(:\d+)?`)
	return pos.ReplaceAllStringFunc(out, func(p string) string {
		m := pos.FindStringSubmatch(p)
		f, ok := files[strings.TrimPrefix(m[1], "./")]
		if !ok {
			return p
		}
		n, _ := strconv.Atoi(m[2])
		for _, s := range f.segments {
			if n >= s.from && n < s.to {
				return fmt.Sprintf("%s (%s:%d)", p, s.page, s.pageLine+n-s.from)
			}
		}
		return p
	})
}

// dependOnTree makes the test's cached result depend on every file of the
// checkout: the go commands it runs read them, which go test cannot see,
// so it stats each one (go test records the files a test stats).
func dependOnTree(t *testing.T) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			_, err = os.Stat(path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// goCmd runs the go command in dir and returns its combined output.
func goCmd(dir string, env []string, args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append([]string{"GOWORK=off"}, env...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// setupCommands are the go mod commands of the README's setup block, the
// checkout's path (../idemcheck) replaced by this one's.
func setupCommands(t *testing.T, s snippet, checkout string) [][]string {
	t.Helper()
	var out [][]string
	for _, l := range strings.Split(strings.TrimSpace(s.body), "\n") {
		l, _, _ = strings.Cut(l, "#")
		f := strings.Fields(l)
		switch {
		case len(f) == 0:
		case f[0] == "mkdir" || f[0] == "cd":
			// The scratch module's directory is made already.
		case len(f) > 2 && f[0] == "go" && f[1] == "mod":
			for k := range f {
				f[k] = strings.ReplaceAll(f[k], "=../idemcheck", "="+checkout)
			}
			out = append(out, f[1:])
		default:
			t.Errorf("%s:%d: the setup block holds %q; the check runs only mkdir, cd and go mod commands", s.page, s.bodyLine, l)
		}
	}
	return out
}

// TestDocsSnippetsCompile compiles every ```go block of the README and of
// docs/*.md, as its marker places it, in one scratch module that requires
// this checkout (the README's setup commands, the checkout's go.sum), with
// go vet; then, unless -short, runs the tests of the blocks marked run.
func TestDocsSnippetsCompile(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	t.Parallel()
	dependOnTree(t)
	start := time.Now()
	var snips []snippet
	var setup *snippet
	for _, page := range snippetPages(t) {
		b, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		s, problems := parseSnippets(page, string(b))
		for _, p := range problems {
			t.Error(p)
		}
		for _, sn := range s {
			if sn.verb == "setup" {
				if setup != nil {
					t.Errorf("%s:%d: a second docscheck: setup (the first: %s:%d)", sn.page, sn.line, setup.page, setup.line)
				}
				setup = &sn
				continue
			}
			snips = append(snips, sn)
		}
	}
	if setup == nil {
		t.Fatal("README.md has no <!-- docscheck: setup --> block: the commands that make a reader's module")
	}
	files, order, problems := buildFiles(snips)
	for _, p := range problems {
		t.Error(p)
	}
	// What a reader copies whole is gofmt'd.
	for _, s := range snips {
		if s.verb != "file" {
			continue
		}
		if b, err := format.Source([]byte(s.code)); err == nil && string(b) != s.code {
			t.Errorf("%s:%d: the block of %s is not gofmt'd; gofmt gives:\n%s", s.page, s.line, s.path, b)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	checkout, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, args := range setupCommands(t, *setup, checkout) {
		if out, err := goCmd(dir, nil, args...); err != nil {
			t.Fatalf("%s:%d: go %s: %v\n%s", setup.page, setup.bodyLine, strings.Join(args, " "), err, out)
		}
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range order {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(files[p].text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// go mod tidy, as the README says; it may need the module proxy (for
	// the modules only tests of dependencies import). Without it, the go
	// command adds what the build needs from the module cache.
	var env []string
	if out, err := goCmd(dir, nil, "mod", "tidy"); err != nil {
		t.Logf("go mod tidy failed (no module proxy?); going on with -mod=mod:\n%s", out)
		env = append(env, "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=mod"))
	}
	made := time.Since(start)
	if out, err := goCmd(dir, env, "vet", "./..."); err != nil {
		t.Fatalf("go vet of the snippets: %v\n%s", err, pageRef(out, files))
	}
	vetted := time.Since(start)
	t.Logf("%d files from %d blocks: module made in %s, vetted in %s", len(order), len(snips), made.Round(time.Millisecond), (vetted - made).Round(time.Millisecond))
	if testing.Short() {
		return
	}
	runs := toRun(snips, files)
	if len(runs) == 0 {
		return
	}
	var names, pkgs []string
	for pkg, ns := range runs {
		pkgs = append(pkgs, pkg)
		names = append(names, ns...)
	}
	slices.Sort(pkgs)
	slices.Sort(names)
	args := append([]string{"test", "-count=1", "-v", "-run", "^(" + strings.Join(names, "|") + ")$"}, pkgs...)
	out, err := goCmd(dir, env, args...)
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, pageRef(out, files))
	}
	for _, n := range names {
		if !strings.Contains(out, "--- PASS: "+n+" ") {
			t.Errorf("go %s: %s did not pass:\n%s", strings.Join(args, " "), n, out)
		}
	}
	// A passing Check says so under -v, in one line.
	if checks := strings.Count(strings.Join(codeOf(snips, true), ""), "consumertest.Check("); checks > 0 {
		if n := len(passLine.FindAllString(out, -1)); n < checks {
			t.Errorf("%d Check(s) run, %d summary line(s) under -v:\n%s", checks, n, out)
		}
	}
	t.Logf("tests %s run in %s (total %s)", strings.Join(names, ", "), (time.Since(start) - vetted).Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	if os.Getenv("IDEMCHECK_DOCS_FUZZ") == "1" {
		fuzzAsDocumented(t, dir, env)
	}
}

var passLine = regexp.MustCompile(`consumer "[^"]+": no law broken in \d+ scenario\(s\); reached \d+ of \d+ coverage situations`)

// codeOf is the code of the snippets (only those marked run, if run).
func codeOf(snips []snippet, run bool) []string {
	var out []string
	for _, s := range snips {
		if !run || s.run {
			out = append(out, s.code)
		}
	}
	return out
}

// fuzzAsDocumented runs the README's go test -fuzz command, as written but
// for a budget of 20 inputs, in the scratch module: it starts fuzzing.
// Opt in with IDEMCHECK_DOCS_FUZZ=1: the first build with the fuzzing
// instrumentation takes minutes.
func fuzzAsDocumented(t *testing.T, dir string, env []string) {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l, _, _ := strings.Cut(strings.TrimSpace(sc.Text()), "#")
		if !strings.HasPrefix(l, "go test ") || !strings.Contains(l, " -fuzz ") {
			continue
		}
		args, err := shellWords(strings.TrimPrefix(strings.TrimSpace(l), "go "))
		if err != nil {
			t.Fatalf("README.md: %s: %v", l, err)
		}
		out, err := goCmd(dir, env, append(args, "-fuzztime", "20x")...)
		if err != nil || !strings.Contains(out, "now fuzzing with") {
			t.Errorf("README.md: %s -fuzztime 20x: %v\n%s", l, err, out)
		}
		return
	}
	t.Error("README.md shows no go test -fuzz command")
}

// TestDocsSnippetMarkers holds the parser of the markers to what it must
// accept and flag.
func TestDocsSnippetMarkers(t *testing.T) {
	page := strings.Join([]string{
		"<!-- docscheck: setup -->",
		"    mkdir payments && cd payments",
		"    go mod init example.com/payments",
		"",
		"<!-- docscheck: file a/a.go -->",
		"```go",
		"package a",
		"```",
		"<!-- docscheck: stand-in b/b.go",
		"package b",
		"-->",
		"<!-- docscheck: wrap a/a_test.go run",
		"package a",
		"func TestA(t *testing.T) {",
		"\t{{snippet}}",
		"}",
		"-->",
		"```go",
		"_ = 1",
		"```",
		"<!-- docscheck: same a/a.go -->",
		"```go",
		"package a",
		"```",
		"<!-- docscheck: same a/a.go -->",
		"```go",
		"package other",
		"```",
		"```go",
		"unmarked()",
		"```",
		"<!-- docscheck: file ../x.go -->",
		"<!-- docscheck: append a/a.go -->",
		"text between",
		"<!-- docscheck: append nowhere/x.go -->",
		"```go",
		"func X() {}",
		"```",
	}, "\n")
	snips, problems := parseSnippets("page.md", page)
	var kinds []string
	for _, s := range snips {
		kinds = append(kinds, s.verb+" "+s.path)
	}
	if got, want := strings.Join(kinds, ", "), "setup , file a/a.go, stand-in b/b.go, wrap a/a_test.go, same a/a.go, same a/a.go, append nowhere/x.go"; got != want {
		t.Errorf("parsed %s\nwant   %s", got, want)
	}
	for _, want := range []string{"page.md:29: a ```go block with no docscheck marker", "page.md:32: docscheck: ../x.go is not a clean relative path", "page.md:34: the docscheck marker of line 33 is not followed by a ```go block"} {
		if !slices.ContainsFunc(problems, func(p string) bool { return strings.HasPrefix(p, want) }) {
			t.Errorf("not flagged: %s; flagged:\n%s", want, strings.Join(problems, "\n"))
		}
	}
	if len(problems) != 3 {
		t.Errorf("%d problems, want 3:\n%s", len(problems), strings.Join(problems, "\n"))
	}
	files, order, problems := buildFiles(snips[1:])
	if got := strings.Join(order, " "); got != "a/a.go b/b.go a/a_test.go" {
		t.Errorf("files %s", got)
	}
	if got, want := files["a/a_test.go"].text, "package a\nfunc TestA(t *testing.T) {\n\t_ = 1\n}\n"; got != want {
		t.Errorf("the wrapped file is\n%s\nwant\n%s", got, want)
	}
	if len(problems) != 2 || !strings.Contains(problems[0], "append nowhere/x.go: no block makes that file") || !strings.Contains(problems[1], "page.md:27: docscheck: same a/a.go: the block differs") {
		t.Errorf("problems:\n%s", strings.Join(problems, "\n"))
	}
	if got := toRun(snips, files); len(got["./a"]) != 1 || got["./a"][0] != "TestA" {
		t.Errorf("to run: %v", got)
	}
	if got, want := pageRef("a/a_test.go:3:2: undefined: x", files), "a/a_test.go:3:2 (page.md:19): undefined: x"; got != want {
		t.Errorf("pageRef: %s, want %s", got, want)
	}
}
