package consumerharness

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// withoutTimes is a result with its durations zeroed, to compare two.
func withoutTimes(r VerifyResult) string {
	r.Elapsed = 0
	for i := range r.Levels {
		r.Levels[i].Elapsed = 0
	}
	r.Outcome = nil
	js, _ := json.Marshal(r)
	return string(js)
}

// TestTheSameBoundsGiveTheSameResult: a search is deterministic: the same
// bounds give the same result, figures and counterexample included, and
// on several walkers the same verdict and counterexample.
func TestTheSameBoundsGiveTheSameResult(t *testing.T) {
	b := Bounds{Events: []Fate{FateOK}, Workers: 2, Preemptions: 1, Crashes: 1, Duplicates: 1}
	split := soundnessConsumers()[1]
	for _, c := range []Consumer{adrConsumer(), split} {
		first, err := Explore(c, b)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Explore(c, b)
		if err != nil {
			t.Fatal(err)
		}
		if withoutTimes(first) != withoutTimes(again) {
			t.Errorf("%s: two searches of the same bounds differ:\n%s\n%s", c.Name, withoutTimes(first), withoutTimes(again))
		}
		par, err := Explore(c, b, VerifyParallel(3))
		if err != nil {
			t.Fatal(err)
		}
		if par.Verified != first.Verified || par.Failed != first.Failed || par.Law != first.Law || par.Preemptions != first.Preemptions {
			t.Errorf("%s: 3 walkers gave another verdict: %+v", c.Name, par)
		}
		if first.Failed {
			a, _ := first.Scenario.Marshal()
			p, _ := par.Scenario.Marshal()
			if string(a) != string(p) || first.Outcome.Trace.String() != par.Outcome.Trace.String() {
				t.Errorf("%s: 3 walkers gave another counterexample:\n%s\n%s", c.Name, a, p)
			}
		}
	}
}

// TestAStoppedSearchSaysWhatItExplored: a schedule budget or a cancelled
// context stops the search; the result names the bound explored in full,
// and proves nothing beyond it.
func TestAStoppedSearchSaysWhatItExplored(t *testing.T) {
	b := Bounds{Events: []Fate{FateOK}, Workers: 2, Preemptions: 2, Crashes: 1, Duplicates: 1}
	full, err := Explore(adrConsumer(), b)
	if err != nil || !full.Verified {
		t.Fatalf("%v\n%s", err, full.Report())
	}
	// Stop in the middle of the search of at most 1 preemption.
	budget := full.Levels[0].Schedules + full.Levels[1].Schedules/2
	res, err := Explore(adrConsumer(), b, VerifySchedules(budget))
	if err != nil {
		t.Fatal(err)
	}
	if res.Verified || res.Failed || !strings.Contains(res.Stopped, "schedule budget") || res.PreemptionsExplored != 0 {
		t.Fatalf("stopped search: %+v", res)
	}
	if !strings.Contains(res.Report(), "NOT VERIFIED") || !strings.Contains(res.Explored(), "at most 0 preemption") {
		t.Errorf("the report does not say what was explored:\n%s", res.Report())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err = Explore(adrConsumer(), b, VerifyContext(ctx))
	if err != nil || res.Stopped != "interrupted" || res.Verified || res.PreemptionsExplored != -1 {
		t.Fatalf("interrupted search: %v %+v", err, res)
	}
	if !strings.Contains(res.Explored(), "no bound") {
		t.Errorf("interrupted before any bound: %s", res.Explored())
	}
}

func TestBadBoundsAreAClearError(t *testing.T) {
	for _, tc := range []struct {
		b    Bounds
		want string
	}{
		{Bounds{Workers: 2}, "0 events"},
		{Bounds{Events: []Fate{"often"}, Workers: 2}, `"often" is not ok, same, poison or transient:N`},
		{Bounds{Events: []Fate{"transient:0"}, Workers: 2}, "transient:N needs"},
		{Bounds{Events: []Fate{FateOK}, Workers: 9}, "workers 9"},
		{Bounds{Events: []Fate{FateOK}, Workers: 1, Crashes: -1}, "crashes -1"},
		{Bounds{Events: []Fate{FateOK}, Workers: 1, Durations: []time.Duration{time.Microsecond}}, "duration 1µs"},
	} {
		_, err := Explore(adrConsumer(), tc.b)
		if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want an error saying %q", tc.b, err, tc.want)
		}
	}
	if fs, err := ParseFates("ok,transient:2,poison"); err != nil || len(fs) != 3 || fs[1] != Transient(2) {
		t.Errorf("ParseFates: %v %v", fs, err)
	}
	if fs, err := ParseFates("3"); err != nil || len(fs) != 3 || fs[2] != FateOK {
		t.Errorf("ParseFates count: %v %v", fs, err)
	}
}

// TestFatesReachTheirSituations: a transient fate fails the first
// deliveries of its event (the handler nacks, the broker redelivers, the
// attempts run out), a poison event is dead-lettered, and a time advance
// lets an ack timeout expire.
func TestFatesReachTheirSituations(t *testing.T) {
	b := Bounds{Events: []Fate{Transient(1), Transient(2), FatePoison}, Workers: 1, Crashes: 1, Advances: 1}
	res, err := Explore(adrConsumer(), b)
	if err != nil || !res.Verified {
		t.Fatalf("%v\n%s", err, res.Report())
	}
	for _, sit := range []string{"injected-failure", "nack", "redelivery-after-nack", "dead-letter-attempts-spent", "dead-letter-poison",
		"redelivery-after-ack-timeout", "crash-at-begin", "crash-at-commit"} {
		if res.Coverage[sit] == 0 {
			t.Errorf("never reached: %s\n%s", sit, res.Report())
		}
	}
}

// TestANondeterministicHandlerIsReported: a handler whose moves depend on
// more than what it is given and what it reads cannot be searched
// statelessly; the search says so instead of a verdict.
func TestANondeterministicHandlerIsReported(t *testing.T) {
	var calls atomic.Int64
	flaky := func(ctx context.Context, db *sql.DB, m handler.Message) error {
		if calls.Add(1)%3 == 0 {
			return errors.New("every third call fails")
		}
		return adr(ctx, db, m)
	}
	c := adrConsumer()
	c.Handler = flaky
	_, err := Explore(c, Bounds{Events: []Fate{FateOK}, Workers: 2, Preemptions: 1, Crashes: 1, Duplicates: 1})
	if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "not deterministic") {
		t.Fatalf("got %v", err)
	}
}

// TestVerifyPassesACorrectConsumer is Verify as a team's test calls it.
func TestVerifyPassesACorrectConsumer(t *testing.T) {
	Verify(t, adrConsumer(), Bounds{Events: []Fate{FateOK}, Workers: 2, Preemptions: 1, Crashes: 1, Failures: 1, Duplicates: 1})
}

// TestVerifyReplaysTheFileTheEnvironmentNames: the replay command of a
// counterexample Verify saved plays that file, not the search again.
func TestVerifyReplaysTheFileTheEnvironmentNames(t *testing.T) {
	path, err := SaveScenario(t.TempDir(), "adr", LawSingleCredit, "a saved case", busy, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(ReplayEnv, path)
	// Bounds that would take long to search: the replay must not.
	Verify(t, adrConsumer(), Bounds{Events: []Fate{FateOK, FateOK, FateOK}, Workers: 3, Preemptions: 5, Crashes: 3, Duplicates: 3})
}
