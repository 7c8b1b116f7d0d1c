package main

import (
	"os/exec"
	"testing"
)

func TestShellQuote(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"corpus/x.json", "corpus/x.json"},
		{"exec:node consumer.js", "'exec:node consumer.js'"},
		{"it's", `'it'\''s'`},
		{"", "''"},
		{"$HOME;rm", "'$HOME;rm'"},
	} {
		if got := shellQuote(c.in); got != c.want {
			t.Errorf("shellQuote(%q) = %s, want %s", c.in, got, c.want)
		}
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		return
	}
	// A shell gives the word back unchanged.
	for _, in := range []string{"exec:node a b.js", `it's "x" $y \z`, "plain"} {
		out, err := exec.Command(sh, "-c", "printf %s "+shellQuote(in)).Output()
		if err != nil || string(out) != in {
			t.Errorf("sh read %s as %q (%v), want %q", shellQuote(in), out, err, in)
		}
	}
}
