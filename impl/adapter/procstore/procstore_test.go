package procstore_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/impl/adapter/procstore"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeEnv); mode != "" {
		os.Exit(fake(mode))
	}
	os.Exit(m.Run())
}

// timeout keeps the hang tests fast; a real adapter gets the default. It
// stays well above the start of a test binary on a loaded 2-core machine,
// so a slow start is never taken for a hang.
const timeout = 2 * time.Second

func fakeOptions(mode string) procstore.Options {
	// A race-instrumented binary sleeps a second at exit unless told not
	// to, which would read as a hang.
	env := []string{fakeEnv + "=" + mode, "GORACE=atexit_sleep_ms=0"}
	return procstore.Options{Command: []string{os.Args[0]}, Env: env, Timeout: timeout}
}

// openFake opens the fake adapter mode, which must pass the handshake.
func openFake(t *testing.T, mode string, c clock.Source) *procstore.Store {
	t.Helper()
	s, err := procstore.Open(context.Background(), fakeOptions(mode), c)
	if err != nil {
		t.Fatalf("open fake %s: %v", mode, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// wantAdapterError checks that err is an *Error whose message says what
// happened and names the command, and that it came within the timeout.
func wantAdapterError(t *testing.T, err error, elapsed time.Duration, says ...string) {
	t.Helper()
	var ae *procstore.Error
	if !errors.As(err, &ae) {
		t.Fatalf("error %v (%T), want a *procstore.Error", err, err)
	}
	t.Logf("reported: %v", err)
	for _, s := range append(says, ae.Command) {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
	if elapsed > timeout+3*time.Second {
		t.Errorf("took %v to report, want about the timeout %v", elapsed, timeout)
	}
}

// TestFailingAdapters: an adapter that hangs, dies or answers garbage is
// reported at Open with a clear error, within the timeout.
func TestFailingAdapters(t *testing.T) {
	for _, c := range []struct {
		name string
		opts procstore.Options
		says []string
	}{
		{"hang", fakeOptions("hang"), []string{"no answer within 2s", "(now)"}},
		{"exit", fakeOptions("exit3"), []string{"died", "exited with status 3", "cannot open state: boom"}},
		{"silent-exit", fakeOptions("silent-exit"), []string{"died", "exited with status 0"}},
		{"garbage", fakeOptions("garbage"), []string{"garbage", "this is not json"}},
		{"wrong-id", fakeOptions("wrong-id"), []string{"answered id 2 to request 1"}},
		{"wrong-now", fakeOptions("wrong-now"), []string{"answered nowMs 1001 to a request that said nowMs 1000"}},
		{"shell-sleep", procstore.Options{Command: []string{"sh", "-c", "sleep 100"}, Timeout: timeout}, []string{"hung"}},
		{"shell-exit", procstore.Options{Command: []string{"sh", "-c", "echo oops >&2; exit 3"}, Timeout: timeout}, []string{"status 3", "oops"}},
		{"shell-garbage", procstore.Options{Command: []string{"sh", "-c", "echo garbage; sleep 100"}, Timeout: timeout}, []string{"garbage"}},
		{"no-such-command", procstore.Options{Command: []string{"/nonexistent/adapter"}, Timeout: timeout}, []string{"could not start"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			s, err := procstore.Open(context.Background(), c.opts, clock.NewVirtual(1000))
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			wantAdapterError(t, err, time.Since(start), c.says...)
		})
	}
}

// TestFailureMidRun: a failure after the handshake kills the adapter, and
// every later call fails at once with the same error instead of waiting.
func TestFailureMidRun(t *testing.T) {
	ctx := context.Background()
	key := store.Key{Consumer: "ledger", ID: "e1"}
	for _, c := range []struct {
		mode string
		call func(s *procstore.Store) error
		says string
	}{
		{"hang-second", func(s *procstore.Store) error { _, err := s.Claim(ctx, key, 10); return err }, "no answer within"},
		{"die-second", func(s *procstore.Store) error { _, err := s.Records(ctx); return err }, "panic: the second request"},
		{"no-claim", func(s *procstore.Store) error { _, err := s.Claim(ctx, key, 10); return err }, `without the "claim" field`},
		// A 1 MiB request to an adapter that stopped reading fills the pipe:
		// the write itself must time out.
		{"stop-reading", func(s *procstore.Store) error {
			_, _, err := s.Get(ctx, store.Key{ID: strings.Repeat("x", 1<<20)})
			return err
		}, "did not read its stdin"},
	} {
		t.Run(c.mode, func(t *testing.T) {
			s := openFake(t, c.mode, clock.NewVirtual(1000))
			start := time.Now()
			err := c.call(s)
			wantAdapterError(t, err, time.Since(start), c.says)
			start = time.Now()
			_, again := s.NowMs(ctx)
			if again == nil || again.Error() != err.Error() || time.Since(start) > time.Second {
				t.Errorf("call after the failure: %v after %v, want the same error at once", again, time.Since(start))
			}
		})
	}
}

// TestErrorKinds: the stale and not_held kinds become the contract's
// errors; any other kind is an error that leaves the adapter usable.
func TestErrorKinds(t *testing.T) {
	ctx := context.Background()
	s := openFake(t, "ok", clock.NewVirtual(1000))
	k := store.Key{Consumer: "ledger", ID: "e1"}
	if err := s.Fail(ctx, k, 999, "x"); !errors.Is(err, store.ErrStaleToken) {
		t.Errorf("stale: %v", err)
	}
	if err := s.Fail(ctx, k, 998, "x"); !errors.Is(err, store.ErrNotHeld) {
		t.Errorf("not_held: %v", err)
	}
	err := s.Fail(ctx, k, 997, "x")
	var ae *procstore.Error
	if err == nil || errors.As(err, &ae) || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("other kind: %v, want a plain error saying why", err)
	}
	if err := s.Fail(ctx, k, 1, "x"); err != nil {
		t.Errorf("the adapter should still be usable: %v", err)
	}
	recs, err := s.Records(ctx)
	if err != nil || len(recs) != 2 || recs[0].Key.Tenant != "a" {
		t.Errorf("records %+v %v: want them sorted by key", recs, err)
	}
}

// TestCrashRestartsOverState: a crash kills the process; the next request
// starts it over the same state file, and every unit of work open at the
// crash is lost.
func TestCrashRestartsOverState(t *testing.T) {
	ctx := context.Background()
	s := openFake(t, "ok", clock.NewVirtual(1000))
	k := store.Key{Consumer: "ledger", ID: "e1"}
	if c, err := s.Claim(ctx, k, 10); err != nil || c.Token != 1 {
		t.Fatalf("claim: %+v %v", c, err)
	}
	crashing, err := s.Begin(ctx, k, 1)
	if err != nil {
		t.Fatal(err)
	}
	other, err := s.Begin(ctx, store.Key{Consumer: "ledger", ID: "e2"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	crasher, ok := crashing.(store.Crasher)
	if !ok {
		t.Fatal("the unit of work is not a store.Crasher")
	}
	crasher.Crash()
	if c, err := s.Claim(ctx, k, 10); err != nil || c.Token != 2 {
		t.Errorf("claim after the restart: %+v %v, want token 2 from the durable state", c, err)
	}
	other.Credit(store.Entry{Consumer: "ledger", EventID: "e2"})
	if _, err := other.Commit(ctx); err == nil || !strings.Contains(err.Error(), "lost") {
		t.Errorf("commit of a unit open at the crash: %v, want it lost", err)
	}
	fresh, err := s.Begin(ctx, k, 2)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := fresh.Commit(ctx); err != nil || res.Credited != 1 {
		t.Errorf("commit in the new process: %+v %v", res, err)
	}
}

// TestCloseRemovesState: a store Open gave a temporary state file leaves
// nothing behind.
func TestCloseRemovesState(t *testing.T) {
	s, err := procstore.Open(context.Background(), fakeOptions("ok"), clock.NewVirtual(0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(context.Background(), store.Key{ID: "e"}, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.StateFile()); err != nil {
		t.Fatalf("state file: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.StateFile()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state file after Close: %v", err)
	}
	if _, err := s.NowMs(context.Background()); err == nil {
		t.Error("a closed store answered")
	}
}

func TestParseCommand(t *testing.T) {
	argv, err := procstore.ParseCommand("  node  examples/inbox.js --x ")
	if err != nil || strings.Join(argv, "|") != "node|examples/inbox.js|--x" {
		t.Errorf("ParseCommand = %q, %v", argv, err)
	}
	if _, err := procstore.ParseCommand("   "); err == nil {
		t.Error("an empty command parsed")
	}
}
