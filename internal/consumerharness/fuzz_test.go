package consumerharness

import (
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/internal/hunt"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// Every scenario Generator draws has a fuzzing input, and decodes back
// from it unchanged: the fuzzing engine can reach whatever Check can.
func TestFuzzInputRoundTrips(t *testing.T) {
	hunt.Check(t, func(rt *rapid.T) {
		s := Generator(16).Draw(rt, "scenario")
		in, err := FuzzInput(s)
		if err != nil {
			rt.Fatal(err)
		}
		if diff := cmp.Diff(s, FuzzScenario(in, 16)); diff != "" {
			rt.Fatalf("decoded input %x differs (-drawn +decoded):\n%s", in, diff)
		}
	})
}

// Any byte string is a valid scenario of at most maxSteps steps, and the
// same bytes give the same scenario.
func TestFuzzScenarioDecodesAnyInput(t *testing.T) {
	hunt.Check(t, func(rt *rapid.T) {
		data := rapid.SliceOf(rapid.Byte()).Draw(rt, "input")
		maxSteps := rapid.IntRange(0, 20).Draw(rt, "max steps")
		s := FuzzScenario(data, maxSteps)
		if err := s.Validate(); err != nil {
			rt.Fatalf("input %x: %v", data, err)
		}
		if s.Size() > maxSteps || s.Size() > max(len(data)-fuzzHeader, 0) {
			rt.Fatalf("input of %d bytes decoded to %d steps (max %d)", len(data), s.Size(), maxSteps)
		}
		if diff := cmp.Diff(s, FuzzScenario(data, maxSteps)); diff != "" {
			rt.Fatalf("the same input decoded twice differs:\n%s", diff)
		}
	})
	if s := FuzzScenario(nil, 16); s.Workers != 1 || len(s.Events) != 1 || s.Size() != 0 || s.Policy != DefaultPolicy {
		t.Fatalf("the empty input is %+v, want one worker, one event, no step", s)
	}
}

// A scenario the byte form cannot hold is refused with what does not fit.
func TestFuzzInputRefusesWhatItCannotEncode(t *testing.T) {
	s := busy.clone()
	s.Workers = 5
	s.Events[1].User = "u9"
	s.Steps = append(s.Steps, Step{Op: OpAdvance, Ms: 250})
	_, err := FuzzInput(s)
	for _, want := range []string{"5 workers", "event 2", "advances 250 ms"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("FuzzInput: %v, want it to name %q", err, want)
		}
	}
	if _, err := FuzzInput(busy); err != nil {
		t.Fatalf("the busy scenario: %v", err)
	}
}

// The seeds are distinct inputs, and between them reach the steps and
// situations the laws are about.
func TestFuzzSeedsReachTheSituations(t *testing.T) {
	seen := map[string]bool{}
	reached := map[string]bool{}
	for _, s := range fuzzSeeds {
		in, err := FuzzInput(s)
		if err != nil {
			t.Fatal(err)
		}
		if seen[string(in)] {
			t.Errorf("two seeds encode to %x", in)
		}
		seen[string(in)] = true
		res, err := Replay(adrConsumer(), FuzzScenario(in, 16))
		if err != nil {
			t.Fatal(err)
		}
		if res.Failed {
			t.Fatalf("a seed flags the ADR consumer:\n%s", res.Report())
		}
		for k := range res.Outcome.Situations {
			reached[k] = true
		}
	}
	for _, want := range []string{"duplicate-delivered", "injected-failure", "lock-wait", "redelivery-after-ack-timeout",
		"redelivery-after-nack", "dead-letter-poison", "dead-letter-attempts-spent", "crash-at-exec"} {
		if !reached[want] {
			t.Errorf("no seed reaches %q", want)
		}
	}
}
