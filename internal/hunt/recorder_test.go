package hunt_test

import (
	"flag"
	"testing"

	"github.com/idemcheck/idemcheck/internal/hunt"
)

func TestRecorderKeepsFailuresAndSkips(t *testing.T) {
	r := hunt.NewRecorder("hunt/x")
	if r.Failed() || r.Skipped() || r.Name() != "hunt/x" {
		t.Fatal("a new recorder has neither failed nor skipped, and keeps its name")
	}
	r.Logf("dropped %d", 1)
	r.Errorf("law %s broken", "a")
	r.Fatal("law b broken")
	r.Skip()
	if !r.Failed() || !r.Skipped() || r.Message() != "law a broken\nlaw b broken" {
		t.Fatalf("recorder: failed %v skipped %v message %q", r.Failed(), r.Skipped(), r.Message())
	}
}

func TestWithFlagsRestores(t *testing.T) {
	fs := flag.CommandLine
	name := "hunt.test.flag"
	if fs.Lookup(name) == nil { // once per process: -count runs the test again
		fs.String(name, "before", "")
	}
	_ = fs.Set(name, "before")
	hunt.WithFlags(map[string]string{name: "during", "no.such.flag": "x"}, func() {
		if got := fs.Lookup(name).Value.String(); got != "during" {
			t.Fatalf("flag is %q while set, want during", got)
		}
	})
	if got := fs.Lookup(name).Value.String(); got != "before" {
		t.Fatalf("flag is %q after restore, want before", got)
	}
}
