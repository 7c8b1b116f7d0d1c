package docscheck

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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

// Every fuzzrun command the README shows exits as the README says. The
// convention (doc.go): a fuzzrun command is shown in a command block (an
// indented or fenced block, never inline), on a line of its own that ends
// with a comment "# exit N: what it prints", N its exit status (0 nothing
// broken, 1 a law broken or a counterexample, 2 a usage error). A comment
// that says VERIFIED means the output says so too.

// readmeCommand is one fuzzrun command of the README.
type readmeCommand struct {
	line    int
	text    string
	tags    string   // go run's -tags
	args    []string // after ./cmd/fuzzrun
	exit    int
	comment string
}

var (
	fuzzrunCommand = regexp.MustCompile(`\bgo run (-tags[ =](\S+) )?\./cmd/fuzzrun\b`)
	exitClaim      = regexp.MustCompile(`#\s*exit (\d+)\b`)
)

// readmeCommands reads the fuzzrun commands of a page and what its
// comments claim; problems are commands that break the convention.
func readmeCommands(page, text string) (out []readmeCommand, problems []string) {
	inFence := false
	for i, line := range strings.Split(text, "\n") {
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		block := inFence || strings.HasPrefix(line, "    ")
		if !block {
			for _, m := range inlineCode.FindAllStringSubmatch(line, -1) {
				if fuzzrunCommand.MatchString(m[1]) {
					problems = append(problems, fmt.Sprintf("%s:%d: %s is shown inline: show it in a command block, with # exit N", page, i+1, m[1]))
				}
			}
			continue
		}
		loc := fuzzrunCommand.FindStringSubmatchIndex(line)
		if loc == nil {
			continue
		}
		cmd, comment, _ := strings.Cut(line[loc[0]:], "#")
		c := readmeCommand{line: i + 1, text: strings.TrimSpace(cmd), comment: strings.TrimSpace(comment)}
		if loc[4] >= 0 {
			c.tags = line[loc[4]:loc[5]]
		}
		m := exitClaim.FindStringSubmatch("#" + comment)
		if m == nil {
			problems = append(problems, fmt.Sprintf("%s:%d: %s says nothing of its exit status: end the line with # exit N: what it prints", page, i+1, c.text))
			continue
		}
		c.exit, _ = strconv.Atoi(m[1])
		args, err := shellWords(strings.TrimSpace(line[loc[1] : len(cmd)+loc[0]]))
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s:%d: %s: %v", page, i+1, c.text, err))
			continue
		}
		c.args = args
		out = append(out, c)
	}
	return out, problems
}

// shellWords splits a command line as a POSIX shell would, for the
// quoting a documented command uses: single and double quotes, no
// expansion.
func shellWords(s string) ([]string, error) {
	var out []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ' ', '\t':
			if inWord {
				out = append(out, w.String())
				w.Reset()
				inWord = false
			}
		case '\'', '"':
			j := strings.IndexByte(s[i+1:], c)
			if j < 0 {
				return nil, fmt.Errorf("an unclosed %c", c)
			}
			w.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case '\\':
			if i+1 < len(s) {
				i++
				w.WriteByte(s[i])
				inWord = true
			}
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		out = append(out, w.String())
	}
	return out, nil
}

// budget are the flags the test adds to a README command so that it runs
// in a few seconds; where it writes is the command's own (the test sets
// outputDirEnv). A campaign and the reference world's explorer get a time
// budget; a model check of a consumer (-explore) none, so that its
// verdict is the README's; the mutation benchmark one hunt per mutant.
func budget(args []string) []string {
	sub := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub = args[0]
	}
	has := func(f string) bool { return slices.Contains(args, f) }
	switch sub {
	case "", "campaign":
		if has("-duration") || has("-checks") {
			return nil
		}
		return []string{"-duration", "2s"}
	case "consumer":
		switch {
		case has("-explore"):
			return nil // a budget would stop the proof short: NOT VERIFIED
		case has("-replay"), has("-duration"), has("-checks"):
			return nil
		}
		return []string{"-duration", "2s"}
	case "explore":
		if has("-duration") || has("-depth") {
			return nil
		}
		// Its default is 30 s of search, and the exit is the same after
		// any time budget: every schedule explored up to the depth
		// reached.
		return []string{"-duration", "3s"}
	case "mutants":
		return []string{"-runs", "1"}
	}
	return nil // list, replay: quick, and write nothing
}

// outputDirEnv is the directory fuzzrun writes its reports and
// counterexamples under instead of the user's cache (cmd/fuzzrun's
// -help names it).
const outputDirEnv = "IDEMCHECK_OUTPUT_DIR"

// TestREADMECommandsExitAsDocumented runs every fuzzrun command of the
// README with a small budget (budget) and holds its exit status to the
// README's claim. It runs them where a reader would, in the root of a
// checkout: a copy of the README and of the directories of the files the
// commands name, which each command must leave as it was (its reports and
// counterexamples go under the output directory, the user's cache, and
// every file of it the command names is there). The binary is built once
// (with -tags servers too, when a command needs it and can run). Skipped
// under -short.
func TestREADMECommandsExitAsDocumented(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs every fuzzrun command of the README")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	t.Parallel()
	dependOnTree(t)
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	cmds, problems := readmeCommands("README.md", string(b))
	for _, p := range problems {
		t.Error(p)
	}
	if len(cmds) == 0 {
		t.Fatal("README.md shows no fuzzrun command")
	}
	checkout, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	tree := t.TempDir()
	if err := os.WriteFile(filepath.Join(tree, "README.md"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range cmds {
		for _, a := range c.args {
			for _, w := range strings.Fields(a) {
				copyDirOf(t, w, tree)
			}
		}
	}
	out := t.TempDir()
	bin := t.TempDir()
	start := time.Now()
	binaries := map[string]string{}
	build := func(tags string) (string, error) {
		if p, ok := binaries[tags]; ok {
			return p, nil
		}
		p := filepath.Join(bin, "fuzzrun"+strings.ReplaceAll(tags, ",", "-"))
		args := []string{"build", "-o", p}
		if tags != "" {
			args = append(args, "-tags", tags)
		}
		if out, err := goCmd(checkout, nil, append(args, "./cmd/fuzzrun")...); err != nil {
			return "", fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		binaries[tags] = p
		return p, nil
	}
	named := regexp.MustCompile(regexp.QuoteMeta(out) + `[^\s)'"]+`)
	for _, c := range cmds {
		t.Run(strconv.Itoa(c.line), func(t *testing.T) {
			if why := cannotRun(c); why != "" {
				t.Skipf("README.md:%d: %s: %s", c.line, c.text, why)
			}
			exe, err := build(c.tags)
			if err != nil {
				t.Fatal(err)
			}
			args := append(slices.Clone(c.args), budget(c.args)...)
			// A proof too slow for go test ./... still runs, cut short, for
			// what it writes; its verdict is then not the README's.
			cut := tooSlow(c)
			if cut {
				args = append(args, "-duration", "2s")
			}
			before := snapshot(t, tree)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, exe, args...)
			cmd.Dir = tree
			cmd.Env = append(os.Environ(), outputDirEnv+"="+out)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			began := time.Now()
			err = cmd.Run()
			code := 0
			var exit *exec.ExitError
			switch {
			case errors.As(err, &exit):
				code = exit.ExitCode()
			case err != nil:
				t.Fatalf("README.md:%d: %s: %v", c.line, c.text, err)
			}
			t.Logf("README.md:%d: fuzzrun %s: exit %d in %s", c.line, strings.Join(args, " "), code, time.Since(began).Round(time.Millisecond))
			switch {
			case cut:
				t.Logf("README.md:%d: exit status not held to the README's: the search was cut short (%s=1 runs it to the end)", c.line, slowEnv)
			case code != c.exit:
				t.Errorf("README.md:%d: %s exits %d, the README says %d\nstdout:\n%s\nstderr:\n%s", c.line, c.text, code, c.exit, tail(stdout.String()), tail(stderr.String()))
			}
			if !cut && strings.Contains(c.comment, "VERIFIED") && (!strings.Contains(stdout.String(), "VERIFIED ") || strings.Contains(stdout.String(), "NOT VERIFIED")) {
				t.Errorf("README.md:%d: %s: the README says VERIFIED, the output does not:\n%s", c.line, c.text, tail(stdout.String()))
			}
			for _, p := range named.FindAllString(stdout.String()+stderr.String(), -1) {
				if _, err := os.Stat(strings.TrimRight(p, ".,:;")); err != nil {
					t.Errorf("README.md:%d: %s names %s, which is not there: %v", c.line, c.text, p, err)
				}
			}
			if changed := changedFiles(before, snapshot(t, tree)); len(changed) > 0 {
				t.Errorf("README.md:%d: %s changed the checkout: %s", c.line, c.text, strings.Join(changed, ", "))
			}
		})
	}
	if written, err := os.ReadDir(out); err != nil || len(written) == 0 {
		t.Errorf("the README's commands wrote nothing under the output directory %s (%v)", out, err)
	}
	t.Logf("%d commands in %s", len(cmds), time.Since(start).Round(time.Millisecond))
}

// copyDirOf copies, when word names a file of the checkout, the files of
// its directory into tree at the same place.
func copyDirOf(t *testing.T, word, tree string) {
	t.Helper()
	if filepath.IsAbs(word) {
		return
	}
	if st, err := os.Stat(filepath.Join(root, word)); err != nil || st.IsDir() {
		return
	}
	dir := filepath.Dir(word)
	entries, err := os.ReadDir(filepath.Join(root, dir))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(tree, dir), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tree, dir, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// snapshot is every file under dir, by its path, with its content.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		rel, _ := filepath.Rel(dir, path)
		files[rel] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// changedFiles are the files added, removed or changed from a to b.
func changedFiles(a, b map[string]string) []string {
	var out []string
	for p, data := range b {
		if old, ok := a[p]; !ok {
			out = append(out, p+" (added)")
		} else if old != data {
			out = append(out, p+" (changed)")
		}
	}
	for p := range a {
		if _, ok := b[p]; !ok {
			out = append(out, p+" (removed)")
		}
	}
	slices.Sort(out)
	return out
}

// slowEnv makes the test run to the end the commands it otherwise cuts
// short as too slow for go test ./...: the model checks the README says
// VERIFIED, which must finish their search to say so (consumer adr
// -explore: 20 s on two idle cores, more than 50 s on two busy ones).
const slowEnv = "IDEMCHECK_README_SLOW"

// tooSlow reports whether c is a proof that runs cut short (see slowEnv).
func tooSlow(c readmeCommand) bool {
	return strings.Contains(c.comment, "VERIFIED") && os.Getenv(slowEnv) != "1"
}

// cannotRun says why a command cannot run here ("" when it can): a Node.js
// consumer without node (unless NODE_REQUIRED=1, as in CI), the Redis
// consumer without IDEMCHECK_REDIS_ADDR.
func cannotRun(c readmeCommand) string {
	joined := strings.Join(c.args, " ")
	if strings.Contains(joined, "exec:node ") {
		if _, err := exec.LookPath("node"); err != nil && os.Getenv("NODE_REQUIRED") != "1" {
			return "node is not on PATH (NODE_REQUIRED=1 makes this a failure)"
		}
	}
	if slices.Contains(c.args, "redissetnx") && os.Getenv("IDEMCHECK_REDIS_ADDR") == "" {
		return "IDEMCHECK_REDIS_ADDR is not set (set it to 127.0.0.1:6379 to run it)"
	}
	return ""
}

// tail is the end of a long output.
func tail(s string) string {
	if len(s) > 4000 {
		return "...\n" + s[len(s)-4000:]
	}
	return s
}

// TestREADMECommandConvention holds the reader of the commands to the
// convention.
func TestREADMECommandConvention(t *testing.T) {
	page := strings.Join([]string{
		"Inline: `go run ./cmd/fuzzrun list`.",
		"    go run ./cmd/fuzzrun consumer adr -explore   # exit 0: VERIFIED adr",
		"    go run -tags servers ./cmd/fuzzrun consumer 'exec:node x.js' -seed 1   # exit 1: counterexample",
		"    go run ./cmd/fuzzrun mutants",
		"```",
		"go run ./cmd/fuzzrun list   # exit 0",
		"```",
		"    go test ./...",
	}, "\n")
	cmds, problems := readmeCommands("page.md", page)
	var got []string
	for _, c := range cmds {
		got = append(got, fmt.Sprintf("%d %q %q %d", c.line, c.tags, c.args, c.exit))
	}
	want := []string{
		`2 "" ["consumer" "adr" "-explore"] 0`,
		`3 "servers" ["consumer" "exec:node x.js" "-seed" "1"] 1`,
		`6 "" ["list"] 0`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("read:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(problems) != 2 || !strings.HasPrefix(problems[0], "page.md:1: go run ./cmd/fuzzrun list is shown inline") ||
		!strings.HasPrefix(problems[1], "page.md:4: go run ./cmd/fuzzrun mutants says nothing of its exit status") {
		t.Errorf("problems:\n%s", strings.Join(problems, "\n"))
	}
	if got := budget([]string{"consumer", "adr"}); !slices.Contains(got, "-duration") {
		t.Errorf("a consumer campaign's budget: %q", got)
	}
	if got := budget([]string{"consumer", "adr", "-explore"}); got != nil {
		t.Errorf("a proof's budget: %q", got)
	}
	if got := budget([]string{"list"}); got != nil {
		t.Errorf("list's budget: %q", got)
	}
}
