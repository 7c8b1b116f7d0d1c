package consumerharness

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// stickyWorkers is a Worker of the ADR pattern that reuses something from
// one scenario to the next, as a process pool does, and whose reuse keeps
// what a reset should have dropped: the event ids its workers handled,
// which it then skips as duplicates (acked, never credited). Its Closer
// offers fresh workers (handler.FreshWorkers), plain ADR; leaky false
// makes the reuse drop everything, as a right reset does.
type stickyWorkers struct {
	leaky bool
	mu    sync.Mutex
	seen  map[string]bool
}

func (s *stickyWorkers) worker(string, *sql.DB) (handler.Func, io.Closer, error) {
	f := func(ctx context.Context, db *sql.DB, m handler.Message) error {
		s.mu.Lock()
		seen := s.leaky && s.seen[m.EventID]
		s.seen[m.EventID] = true
		s.mu.Unlock()
		if seen {
			return nil
		}
		return adr(ctx, db, m)
	}
	return f, stickyCloser{}, nil
}

type stickyCloser struct{}

func (stickyCloser) Close() error { return nil }

// FreshWorker is handler.FreshWorkers: plain ADR, reusing nothing.
func (stickyCloser) FreshWorker() handler.Worker {
	return func(string, *sql.DB) (handler.Func, io.Closer, error) { return adr, nil, nil }
}

// TestACounterexampleOfReusedWorkersIsPlayedOnFreshOnes: a Worker whose
// reuse keeps state across scenarios makes the hunt's scenarios lose
// events that fresh workers apply; the hunt plays its counterexample on
// fresh workers before it reports it, and reports bad input naming the
// reuse, never a broken law. Reuse that keeps nothing is no failure.
func TestACounterexampleOfReusedWorkersIsPlayedOnFreshOnes(t *testing.T) {
	c := Consumer{Name: "sticky", Schema: ledgerSchema,
		Effects: PerEvent("SELECT event_id, amount_cents FROM ledger"), Dedupe: "SELECT event_id FROM processed_events"}
	leaky := &stickyWorkers{leaky: true, seen: map[string]bool{}}
	c.Worker = leaky.worker
	res, err := Hunt(c, Checks(50), Seed(1), CorpusDir(""))
	if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "keeps state across scenarios") {
		t.Fatalf("want bad input naming the state kept across scenarios, got %v:\n%s", err, res.Report())
	}
	t.Log(err)
	right := &stickyWorkers{seen: map[string]bool{}}
	c.Worker = right.worker
	if res, err := Hunt(c, Checks(50), Seed(1), CorpusDir("")); err != nil || res.Failed {
		t.Fatalf("a reuse that keeps nothing: %v\n%s", err, res.Report())
	}
}

// TestVerifyPlaysItsCounterexampleOnFreshWorkers: the model checker, too,
// plays its counterexample on fresh workers before it reports it.
func TestVerifyPlaysItsCounterexampleOnFreshWorkers(t *testing.T) {
	c := Consumer{Name: "sticky", Schema: ledgerSchema,
		Effects: PerEvent("SELECT event_id, amount_cents FROM ledger"), Dedupe: "SELECT event_id FROM processed_events"}
	leaky := &stickyWorkers{leaky: true, seen: map[string]bool{"e1": true}}
	c.Worker = leaky.worker
	b := Bounds{Events: []Fate{FateOK}, Workers: 1}
	res, err := Explore(c, b, CorpusDir(""), NoCache())
	if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "keeps state across scenarios") {
		t.Fatalf("want bad input naming the state kept across scenarios, got %v:\n%s", err, res.Report())
	}
}
