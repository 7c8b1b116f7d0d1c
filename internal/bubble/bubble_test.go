package bubble_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/idemcheck/idemcheck/internal/bubble"
)

var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// clockIn runs a bubble that sleeps d and reports what its clock said.
func clockIn(t *testing.T, d time.Duration) (start, end time.Time) {
	t.Helper()
	err := bubble.Run(func() {
		start = time.Now()
		time.Sleep(d)
		end = time.Now()
	})
	if err != nil {
		t.Fatal(err)
	}
	return start, end
}

func TestRunPlaysOnTheBubblesClock(t *testing.T) {
	machine := time.Now()
	start, end := clockIn(t, time.Hour)
	if !start.Equal(epoch) || end.Sub(start) != time.Hour {
		t.Fatalf("the bubble's clock: start %v, after a sleep of an hour %v", start, end)
	}
	if time.Since(machine) > time.Minute {
		t.Fatalf("an hour's sleep in the bubble took %v of the machine's time", time.Since(machine))
	}
	// Each bubble starts afresh.
	if again, _ := clockIn(t, time.Second); !again.Equal(epoch) {
		t.Fatalf("a second bubble starts at %v", again)
	}
}

func TestRunFromManyGoroutinesAtOnce(t *testing.T) {
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			d := time.Duration(i+1) * time.Minute
			var got time.Duration
			err := bubble.Run(func() {
				start := time.Now()
				done := make(chan struct{})
				go func() { time.Sleep(d); close(done) }()
				<-done
				got = time.Since(start)
			})
			if err == nil && got != d {
				err = fmt.Errorf("bubble %d: slept %v, want %v", i, got, d)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func TestRunFromInsideACallersBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		time.Sleep(time.Minute)
		start, end := clockIn(t, time.Second)
		if !start.Equal(epoch) || end.Sub(start) != time.Second {
			t.Errorf("the inner bubble's clock: %v then %v", start, end)
		}
		if time.Since(epoch) != time.Minute {
			t.Errorf("the caller's bubble clock moved to %v", time.Since(epoch))
		}
	})
}

func TestAPanicComesBackAsAnError(t *testing.T) {
	err := bubble.Run(func() { panic("boom") })
	var p *bubble.Panic
	if !errors.As(err, &p) || p.Value != "boom" {
		t.Fatalf("got %v", err)
	}
	// A goroutine left blocked on a channel of the bubble: synctest panics
	// once f returns.
	err = bubble.Run(func() {
		block := make(chan struct{})
		go func() { <-block }()
	})
	if !errors.As(err, &p) || !strings.Contains(fmt.Sprint(p.Value), "blocked goroutines remain") {
		t.Fatalf("got %v", err)
	}
	// The host survives both.
	if start, _ := clockIn(t, time.Second); !start.Equal(epoch) {
		t.Fatalf("after the panics: %v", start)
	}
}

// The child process modes of this test binary.
const modeEnv = "BUBBLE_TEST_MODE"

// BenchmarkBubbleInAChild is run by TestTheHostStaysOutOfGoTestsOutput.
func BenchmarkBubbleInAChild(b *testing.B) {
	if os.Getenv(modeEnv) == "" {
		b.Skip("run by TestTheHostStaysOutOfGoTestsOutput")
	}
	for b.Loop() {
		var now time.Time
		if err := bubble.Run(func() { now = time.Now() }); err != nil {
			b.Fatal(err)
		}
		if !now.Equal(epoch) {
			b.Fatalf("the clock is %v", now)
		}
	}
	fmt.Println("bubbles ran")
}

func TestBubbleInAChild(t *testing.T) {
	if os.Getenv(modeEnv) == "" {
		t.Skip("run by TestTheHostStaysOutOfGoTestsOutput")
	}
	if err := bubble.Available(); err != nil {
		t.Fatal(err)
	}
	start, _ := clockIn(t, time.Second)
	fmt.Println("bubbles ran at", start.Format(time.RFC3339))
}

// TestTheHostStaysOutOfGoTestsOutput runs this test binary again the ways
// go test does: a test selected by -run, a benchmark with -run '^$', and
// -v=test2json (go test -json). The bubble must work in each, and the host
// test must never show in the output.
func TestTheHostStaysOutOfGoTestsOutput(t *testing.T) {
	if os.Getenv(modeEnv) != "" {
		t.Skip("a child")
	}
	for _, args := range [][]string{
		{"-test.run", "^TestBubbleInAChild$", "-test.v"},
		{"-test.run", "^TestBubbleInAChild$", "-test.v=test2json", "-test.count=2"},
		{"-test.run", "^$", "-test.bench", "^BenchmarkBubbleInAChild$", "-test.benchtime", "3x"},
		{"-test.run", "^TestBubbleInAChild$", "-test.skip", "Host", "-test.failfast"},
	} {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), modeEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		if !strings.Contains(string(out), "bubbles ran") {
			t.Errorf("%v: the bubble did not run:\n%s", args, out)
		}
		if strings.Contains(string(out), bubble.HostName) {
			t.Errorf("%v: the host shows in the output:\n%s", args, out)
		}
	}
}

// TestAProgramThatIsNotATest builds and runs testdata/program, which makes
// bubbles through testing.MainStart.
func TestAProgramThatIsNotATest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	out, err := exec.Command("go", "run", "./testdata/program").CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "unparsed: no testing/synctest bubble: the process's flags are not parsed yet (a test binary before m.Run, or a program that has not called testing.Init and flag.Parse)\n2000-01-01T00:00:00Z 1h0m0s" {
		t.Fatalf("the program printed:\n%s", out)
	}
}
