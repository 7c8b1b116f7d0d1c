package gen_test

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/idemcheck/idemcheck/faults/gen"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/internal/hunt"
)

// TestLiveScenariosAreValidAndReproducible: every drawn live scenario
// validates, the same seed draws the same one, and restarts appear only
// when allowed.
func TestLiveScenariosAreValidAndReproducible(t *testing.T) {
	hunt.Check(t, func(t *rapid.T) {
		restart := rapid.Bool().Draw(t, "restart")
		l := gen.Live(gen.LiveOptions{Restart: restart}).Draw(t, "live")
		if err := l.Validate(); err != nil {
			t.Fatalf("invalid: %v", err)
		}
		for _, st := range l.Steps {
			if st.Op == scenario.LiveRestart && !restart {
				t.Fatal("a restart was drawn though not allowed")
			}
		}
	})
	a, _ := scenario.MarshalLive(gen.Live(gen.LiveOptions{}).Example(7))
	b, _ := scenario.MarshalLive(gen.Live(gen.LiveOptions{}).Example(7))
	if string(a) != string(b) {
		t.Fatalf("seed 7 drew two different scenarios:\n%s\n%s", a, b)
	}
}
