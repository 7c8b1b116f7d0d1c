package explore

import (
	"context"
	"testing"

	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/impl/system/resolve"
)

// A target that cannot be copied (SQLite, through database/sql) is explored
// statelessly, by replaying every schedule, and reaches exactly the states
// of the in-memory reference, which is copied.
func TestStatelessSQLiteMatchesTheReference(t *testing.T) {
	sqlite, err := resolve.Resolve("sqlite")
	if err != nil {
		t.Skipf("sqlite: %v", err)
	}
	o := Options{World: tiny, Depth: 4}
	want, err := Explore(context.Background(), system.Reference(), o)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Explore(context.Background(), sqlite, o)
	if err != nil {
		t.Fatal(err)
	}
	if got.Counterexample != nil {
		t.Fatalf("sqlite flagged:\n%s", got.Counterexample.Verdict)
	}
	if got.States != want.States || got.Transitions != want.Transitions {
		t.Fatalf("sqlite: %d states %d transitions; the reference %d states %d transitions", got.States, got.Transitions, want.States, want.Transitions)
	}
}
