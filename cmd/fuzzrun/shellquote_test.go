package main

import (
	"os/exec"
	"testing"
)

// TestShellQuoteRoundTrip: a shell reads a quoted word back unchanged, so a
// printed replay command can be pasted as is.
func TestShellQuoteRoundTrip(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	for _, in := range []string{"exec:node a b.js", `it's "x" $y \z`, "plain", "a;b|c&d", ""} {
		out, err := exec.Command(sh, "-c", "printf %s "+shellQuote(in)).Output()
		if err != nil || string(out) != in {
			t.Errorf("sh read %s as %q (%v), want %q", shellQuote(in), out, err, in)
		}
	}
}
