package consumerharness

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/idemcheck/idemcheck/corpus/casefile"
)

// The replay command and IDEMCHECK_REPLAY.
//
// A counterexample's report ends with the command that replays it, to be
// run from the root of the module:
//
//	IDEMCHECK_REPLAY=testdata/consumertest/ledger-single-credit-654a4053153b.json go test ./ledger -run '^TestLedgerConsumer$'
//
// The package (./ledger) is the test's, relative to the module's root: go
// test runs a package's test binary in the package's directory, so the
// harness finds the root by looking for go.mod from there. The file is
// named as the test saved it, relative to that same directory, where the
// replayed test reads it.
//
// Check (and Verify, which hands the replay to Check) reads the variable
// and replays the case it names, instead of drawing scenarios, only when
// the case is its own: the file exists, relative to the package's
// directory or, failing that, to the module's root (or as an absolute
// path), and it is a case of a consumer of the same Name (a bare
// scenario, naming no consumer, is every consumer's). Any other Check
// logs why and returns without checking anything: under go test ./...
// with the variable set, the other packages' Checks, and the other
// consumers' Checks of the same package, neither fail nor run a search.
// A file that exists but does not read as a consumer's case fails the
// test.

// replayCommand is the command that replays the counterexample saved at
// path, found by the test (or explore, or hunt) named name.
func replayCommand(path, name string) string {
	pkg := goTestPackage()
	if pkg != "" {
		pkg += " "
	}
	test, _, _ := strings.Cut(name, "/")
	if test == "hunt" || test == "explore" {
		// Hunt and Explore run outside a test of the team's: the command
		// names the test that checks the consumer, whatever it is.
		return fmt.Sprintf("consumertest.Replay(c, s) with s from consumertest.LoadScenario(%q); or %s=%s go test %s-run TestOfThatConsumer",
			path, ReplayEnv, shellWord(path), pkg)
	}
	return fmt.Sprintf("%s=%s go test %s-run '%s'", ReplayEnv, shellWord(path), pkg, runPattern(name))
}

// goTestPackage is the package of the running test as go test names it
// from the module's root ("./ledger", or "." for the root's own), found
// from the working directory, where go test runs a package's tests; "" when
// no go.mod is above it.
func goTestPackage() string {
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	root := moduleRoot(wd)
	if root == "" {
		return ""
	}
	rel, err := filepath.Rel(root, wd)
	if err != nil {
		return ""
	}
	if rel == "." {
		return "."
	}
	return shellWord("./" + filepath.ToSlash(rel))
}

// moduleRoot is the nearest directory at or above dir that holds a go.mod,
// or "".
func moduleRoot(dir string) string {
	for {
		if st, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil && st.Mode().IsRegular() {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			return ""
		}
		dir = up
	}
}

// shellWord quotes s for a POSIX shell when it holds anything but the
// characters of a plain path.
func shellWord(s string) string {
	plain := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-./:@%+=,", r)) {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// replayFile finds the file IDEMCHECK_REPLAY names: as given when it is
// absolute, else relative to the working directory (the package's, under
// go test), else relative to the module's root. ok is false when none
// exists; tried says where it looked.
func replayFile(file string) (path string, ok bool, tried string) {
	if filepath.IsAbs(file) {
		return file, fileExists(file), file
	}
	wd, err := os.Getwd()
	if err != nil {
		return file, fileExists(file), file
	}
	places := []string{filepath.Join(wd, file)}
	if root := moduleRoot(wd); root != "" && root != wd {
		places = append(places, filepath.Join(root, file))
	}
	if fileExists(places[0]) {
		return file, true, ""
	}
	for _, p := range places[1:] {
		if fileExists(p) {
			return p, true, ""
		}
	}
	if len(places) == 1 {
		return file, false, places[0]
	}
	return file, false, "neither " + strings.Join(places, " nor ")
}

// replayCase reads the case IDEMCHECK_REPLAY names for consumer c. other,
// when not empty, says why the case is not c's (no such file here,
// another consumer's case, not a consumer's case): the Check is then not
// the one the variable is for. err is a file that exists but does not
// read as a consumer's case.
func replayCase(file string, c Consumer) (path string, s *Scenario, other string, err error) {
	path, ok, tried := replayFile(file)
	if !ok {
		return path, nil, "no such file from this test's package: " + tried, nil
	}
	if cs, err := casefile.LoadAny(path, nil); err == nil && !cs.Bare {
		switch {
		case !cs.IsConsumer():
			return path, nil, fmt.Sprintf("a %s case against %s, not a consumer's", cs.Property, cs.Target), nil
		case cs.Target != c.displayName():
			return path, nil, fmt.Sprintf("a case of consumer %q, not of %q", cs.Target, c.displayName()), nil
		}
	}
	s, err = LoadScenario(path)
	if err != nil {
		return path, nil, "", err
	}
	return path, s, "", nil
}
