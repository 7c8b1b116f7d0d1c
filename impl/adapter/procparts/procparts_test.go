package procparts_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/adapter/procparts"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/hlc"
	"github.com/idemcheck/idemcheck/impl/contract/projector"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/properties"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeEnv); mode != "" {
		os.Exit(fake(mode))
	}
	os.Exit(m.Run())
}

// timeout keeps the hang tests fast; a real implementation gets the default.
const timeout = 500 * time.Millisecond

func fakeOptions(mode string) procparts.Options {
	// A race-instrumented binary sleeps a second at exit unless told not
	// to, which would read as a hang.
	env := []string{fakeEnv + "=" + mode, "GORACE=atexit_sleep_ms=0"}
	return procparts.Options{Command: []string{os.Args[0]}, Env: env, Timeout: timeout}
}

// patient is the timeout of the tests that play whole scenarios: a burst
// of 65,536 stamps under the race detector takes seconds.
const patient = time.Minute

func openHLCs(t *testing.T, mode string) *procparts.HLCs {
	t.Helper()
	opts := fakeOptions(mode)
	if !strings.HasPrefix(mode, "hang") {
		opts.Timeout = patient
	}
	hs, err := procparts.OpenHLCs(context.Background(), opts)
	if err != nil {
		t.Fatalf("open fake %s: %v", mode, err)
	}
	t.Cleanup(func() { hs.Close() })
	return hs
}

func openProjectors(t *testing.T, mode string) *procparts.Projectors {
	t.Helper()
	opts := fakeOptions(mode)
	opts.Timeout = patient
	ps, err := procparts.OpenProjectors(context.Background(), opts)
	if err != nil {
		t.Fatalf("open fake %s: %v", mode, err)
	}
	t.Cleanup(func() { ps.Close() })
	return ps
}

// wantError checks that err is an *Error naming the command and saying
// what happened, and that it came within the timeout.
func wantError(t *testing.T, err error, elapsed time.Duration, says ...string) {
	t.Helper()
	var pe *procparts.Error
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T), want a *procparts.Error", err, err)
	}
	t.Logf("reported: %v", err)
	for _, s := range append(says, pe.Command) {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
	if elapsed > timeout+3*time.Second {
		t.Errorf("took %v to report, want about the timeout %v", elapsed, timeout)
	}
}

// TestFailingImplementations: an implementation that hangs, dies, answers
// garbage or speaks another protocol is reported at Open, within the
// timeout, naming the request.
func TestFailingImplementations(t *testing.T) {
	for _, c := range []struct {
		name string
		opts procparts.Options
		says []string
	}{
		{"hang", fakeOptions("hang"), []string{"no answer within 500ms", "request 1 (hello)"}},
		{"exit", fakeOptions("exit3"), []string{"died", "exited with status 3", "cannot start: boom"}},
		{"garbage", fakeOptions("garbage"), []string{"garbage", "this is not json"}},
		{"wrong-id", fakeOptions("wrong-id"), []string{"answered id 2 to request 1"}},
		{"a store adapter", fakeOptions("store"), []string{"does not speak version 1 of the hlc protocol", `unknown op "hello"`}},
		{"version 2", fakeOptions("v2"), []string{"speaks version 2 of the hlc protocol; this harness speaks version 1"}},
		{"other protocol", fakeOptions("other-protocol"), []string{`answered hello with protocol "projector", want "hlc"`}},
		{"no-such-command", procparts.Options{Command: []string{"/nonexistent/hlc"}, Timeout: timeout}, []string{"could not start"}},
		{"shell-exit", procparts.Options{Command: []string{"sh", "-c", "echo oops >&2; exit 3"}, Timeout: timeout}, []string{"status 3", "oops"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			hs, err := procparts.OpenHLCs(context.Background(), c.opts)
			if err == nil {
				hs.Close()
				t.Fatal("OpenHLCs succeeded")
			}
			wantError(t, err, time.Since(start), c.says...)
		})
	}
	t.Run("projector given an hlc", func(t *testing.T) {
		opts := fakeOptions("other-protocol")
		_, err := procparts.OpenProjectors(context.Background(), opts)
		wantError(t, err, 0, `answered hello with protocol "hlc", want "projector"`)
	})
}

// TestNegativeMaxOffset: a clock that declares a negative max offset is a
// bad option, reported when the clock is opened.
func TestNegativeMaxOffset(t *testing.T) {
	hs := openHLCs(t, "negative-offset")
	_, err := hs.Open("A", clock.NewVirtual(1000))
	if err == nil || !strings.Contains(err.Error(), "max offset -5ms is negative") || !strings.Contains(err.Error(), "node A") {
		t.Fatalf("Open = %v, want an error saying the max offset is negative", err)
	}
}

// TestClockFailureMidRun: a failure after hello is the clock's Err (an
// *Error naming the request and op); every later call fails at once.
func TestClockFailureMidRun(t *testing.T) {
	for _, c := range []struct {
		mode string
		call func(c hlc.Clock)
		says []string
	}{
		{"hang-tick", func(c hlc.Clock) { c.Tick() }, []string{"(tick)", "no answer within"}},
		{"die-merge", func(c hlc.Clock) { _, _ = c.Merge(hlc.Timestamp{WallMs: 1000, Node: "B"}) }, []string{"(merge)", "died", "TypeError: remote.wallMs is undefined"}},
		{"tick-error", func(c hlc.Clock) { c.Tick() }, []string{"(tick)", "answered tick with an error (clock not ready"}},
		{"burst-short", func(c hlc.Clock) { c.(hlc.Burster).TickBurst(3) }, []string{"(burst)", "answered a burst of 3 with 2 stamps"}},
	} {
		t.Run(c.mode, func(t *testing.T) {
			hs := openHLCs(t, c.mode)
			clk, err := hs.Open("A", clock.NewVirtual(1000))
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			c.call(clk)
			err = clk.(hlc.Failer).Err()
			wantError(t, err, time.Since(start), c.says...)
			other, err := hs.Open("B", clock.NewVirtual(1000))
			if err == nil || err.Error() != clk.(hlc.Failer).Err().Error() {
				t.Errorf("open after the failure: %v, %v; want the same error at once", other, err)
			}
		})
	}
}

// TestRefusalIsAnAnswer: a merge answered with kind "refused" is the
// clock's refusal (hlc.ErrRefused), not a failure; the clock goes on.
func TestRefusalIsAnAnswer(t *testing.T) {
	hs := openHLCs(t, "refuse-all")
	clk, err := hs.Open("A", clock.NewVirtual(1000))
	if err != nil {
		t.Fatal(err)
	}
	if d := hlc.DeclarationOf(clk); d.MaxOffset != 500*time.Millisecond {
		t.Errorf("declared %+v, want a max offset of 500ms", d)
	}
	if _, err := clk.Merge(hlc.Timestamp{WallMs: 1000, Node: "B"}); !errors.Is(err, hlc.ErrRefused) {
		t.Fatalf("Merge = %v, want hlc.ErrRefused", err)
	}
	if err := clk.(hlc.Failer).Err(); err != nil {
		t.Fatalf("a refusal failed the clock: %v", err)
	}
	if ts := clk.Tick(); ts.WallMs != 1000 || ts.Node != "A" {
		t.Errorf("tick after a refusal: %v", ts)
	}
}

// TestProjectorFailure: garbage in answer to apply is the projector's Err.
func TestProjectorFailure(t *testing.T) {
	ps := openProjectors(t, "garbage-apply")
	p := ps.New()
	if err := p.(projector.Failer).Err(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	p.Apply(projector.Event{ID: "e1", OrderID: "o1", Kind: projector.OrderCreated})
	wantError(t, p.(projector.Failer).Err(), time.Since(start), "(apply)", "garbage")
	if again := ps.New(); again.(projector.Failer).Err() == nil {
		t.Error("a projector opened after the failure has no error")
	}
}

// twoNodes is a projection scenario: A creates an order, B receives it and
// cancels it, every replica gets both.
func twoNodes() *scenario.Scenario {
	return &scenario.Scenario{Version: scenario.Version, Kind: scenario.KindProjection, Projection: &scenario.Projection{
		Nodes: []scenario.Node{{Name: "A", SkewMs: 300_000}, {Name: "B", SkewMs: -180_000}},
		Steps: []scenario.ProjectionStep{
			{Op: scenario.OpEmit, Node: "A", ID: "e1", Order: "o1", Kind: scenario.EventOrderCreated},
			{Op: scenario.OpBurst, Node: "A", Count: 3},
			{Op: scenario.OpReceive, Node: "B", Event: "e1"},
			{Op: scenario.OpAdvance, Ms: 1000},
			{Op: scenario.OpEmit, Node: "B", ID: "e2", Order: "o1", Kind: scenario.EventOrderCancelled},
		},
		Replicas: []scenario.Replica{{Name: "r1", Deliveries: []string{"e1", "e2"}}, {Name: "r2", Deliveries: []string{"e2", "e1", "e2"}}},
	}}
}

// TestRunnerReportsFailure: a clock or projector that fails mid-run makes
// the run an error of the harness naming it, not a verdict.
func TestRunnerReportsFailure(t *testing.T) {
	hs := openHLCs(t, "hang-tick")
	_, err := runner.RunProjection(twoNodes(), system.WithHLC("hang", hs.Open))
	if err == nil || !strings.Contains(err.Error(), "the HLC of node A failed") || !strings.Contains(err.Error(), "no answer within") {
		t.Errorf("run over a hanging clock: %v", err)
	}
	ps := openProjectors(t, "garbage-apply")
	_, err = runner.RunProjection(twoNodes(), system.WithProjector("garbage", ps.New))
	if err == nil || !strings.Contains(err.Error(), "projector garbage failed") || !strings.Contains(err.Error(), "garbage") {
		t.Errorf("run over a projector answering garbage: %v", err)
	}
}

// TestSameAsInProcess: the reference clock and projector served through the
// process give the same run as in process, burst and all.
func TestSameAsInProcess(t *testing.T) {
	hs := openHLCs(t, "ok")
	ps := openProjectors(t, "ok")
	direct, err := runner.RunProjection(twoNodes(), system.Reference())
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []system.Target{system.WithHLC("proc", hs.Open), system.WithProjector("hlc", ps.New)} {
		out, err := runner.RunProjection(twoNodes(), target)
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Projection.Readings) != len(direct.Projection.Readings) {
			t.Fatalf("%s: %d readings, want %d", target.Name, len(out.Projection.Readings), len(direct.Projection.Readings))
		}
		for i, r := range out.Projection.Readings {
			if r.Got != direct.Projection.Readings[i].Got {
				t.Errorf("%s reading %d: %v, in process %v", target.Name, i, r.Got, direct.Projection.Readings[i].Got)
			}
		}
		for i, rep := range out.Projection.Replicas {
			got := rep.Projectors[0].Statuses()
			want := direct.Projection.Replicas[i].Projectors[1].Statuses() // the reference's hlc projector
			if got["o1"] != want["o1"] {
				t.Errorf("%s replica %s: o1 %s, in process %s", target.Name, rep.Name, got["o1"], want["o1"])
			}
		}
	}
}

// TestChecksBiteThroughTheProcess: the projection properties pass the
// reference served by the process and catch a mutant served the same way.
func TestChecksBiteThroughTheProcess(t *testing.T) {
	opts := properties.HuntOptions{Kind: scenario.KindProjection, Properties: properties.ForKind(scenario.KindProjection), Checks: 30, Seed: 1}
	if res := properties.Hunt(system.WithHLC("proc-ok", openHLCs(t, "ok").Open), opts); res.Failed {
		t.Errorf("the reference clock through the process failed %s: %s %v", res.Law, res.Message, res.Verdict.Details)
	}
	if res := properties.Hunt(system.WithProjector("proc-ok", openProjectors(t, "ok").New), opts); res.Failed {
		t.Errorf("the reference projector through the process failed %s: %s %v", res.Law, res.Message, res.Verdict.Details)
	}
	opts.NoReduce = true
	opts.Checks = 300
	if res := properties.Hunt(system.WithHLC("proc-no-merge", openHLCs(t, "no-merge").Open), opts); !res.Failed || !strings.HasPrefix(res.Law, "hlc-laws/") {
		t.Errorf("a clock that never merges, through the process: failed %v (%s), want an hlc-laws breach", res.Failed, res.Law)
	}
	if res := properties.Hunt(system.WithProjector("proc-lww", openProjectors(t, "lww").New), opts); !res.Failed || res.Law == properties.RunnerLaw {
		t.Errorf("a last-write-wins projector, through the process: failed %v (%s), want a breach", res.Failed, res.Law)
	}
}

func TestParseCommand(t *testing.T) {
	argv, err := procparts.ParseCommand("  node  hlc.js --x ")
	if err != nil || strings.Join(argv, "|") != "node|hlc.js|--x" {
		t.Errorf("ParseCommand = %q, %v", argv, err)
	}
	if _, err := procparts.ParseCommand("   "); err == nil {
		t.Error("an empty command parsed")
	}
}
