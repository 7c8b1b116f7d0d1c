package consumerproc

import (
	"os"
	"testing"
)

// TestReapKillsWhatStaysIdle: the reaper kills a process (waiting to be
// reset, or a spare) that stayed idle across two of its looks. (The reaper
// is called here by hand; its timer is not what is tested.)
func TestReapKillsWhatStaysIdle(t *testing.T) {
	for _, reset := range []string{"clear", ""} {
		env := []string{"CONSUMERPROC_FAKE=ok", "CONSUMERPROC_RESET=" + reset, "GORACE=atexit_sleep_ms=0"}
		pl := NewPool([]string{os.Args[0]}, Options{Env: env, MaxIdle: 1})
		defer pl.Close()
		// Twice: a process that does not declare reset gets a spare
		// started for a worker name asked for before.
		for range 2 {
			_, c, err := pl.Worker("w1", nil)
			if err != nil {
				t.Fatal(err)
			}
			c.Close()
		}
		for look, want := range []int{1, 1, 0} {
			if look > 0 {
				pl.reap()
			}
			settled(pl)
			if st := pl.Stats(); st.Waiting != want {
				t.Fatalf("reset %q, after %d look(s): stats %+v, want %d waiting", reset, look, st, want)
			}
		}
		before := pl.Stats()
		if _, c, err := pl.Worker("w1", nil); err != nil {
			t.Fatalf("reset %q: a worker after the reaper: %v", reset, err)
		} else {
			c.Close()
		}
		if st := pl.Stats(); st.Reused != before.Reused || st.Spares != before.Spares {
			t.Errorf("reset %q: stats %+v, want the second worker's process started for it", reset, st)
		}
	}
}

// settled waits until no spare of pl is being started.
func settled(pl *Pool) {
	for {
		pl.mu.Lock()
		var s *spare
		if len(pl.pending) > 0 {
			s = pl.pending[0]
		}
		for _, q := range pl.spares {
			for _, o := range q {
				select {
				case <-o.ready:
				default:
					s = o
				}
			}
		}
		pl.mu.Unlock()
		if s == nil {
			return
		}
		<-s.ready
	}
}

// TestPoolBounds: at most MaxIdle processes wait for a worker, spares
// started ahead included; a worker started while none waits gets one
// started for it.
func TestPoolBounds(t *testing.T) {
	env := []string{"CONSUMERPROC_FAKE=ok", "CONSUMERPROC_RESET=clear", "GORACE=atexit_sleep_ms=0"}
	pl := NewPool([]string{os.Args[0]}, Options{Env: env, MaxIdle: 1})
	defer pl.Close()
	var closers []func() error
	for _, id := range []string{"w1", "w2", "w3"} {
		_, c, err := pl.Worker(id, nil)
		if err != nil {
			t.Fatal(err)
		}
		closers = append(closers, c.Close)
		settled(pl)
		if st := pl.Stats(); st.Waiting != 1 {
			t.Errorf("after %s started: stats %+v, want one spare waiting", id, st)
		}
	}
	for _, c := range closers {
		c()
	}
	settled(pl)
	if st := pl.Stats(); st.Waiting != 1 || st.Started != 4 || st.Reused != 0 {
		t.Errorf("stats %+v, want 4 processes started (one per worker and the spare), one waiting, the others killed", st)
	}
}
