package procstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"

	"github.com/idemcheck/idemcheck/impl/adapter/internal/lineproc"
)

// DefaultTimeout bounds each request unless Options.Timeout is set.
const DefaultTimeout = 5 * time.Second

// StateFileEnv names the environment variable that tells the adapter where
// its durable state lives.
const StateFileEnv = "IDEMCHECK_STATE_FILE"

// Options configure an adapter process.
type Options struct {
	// Command is the adapter's argv; Command[0] is looked up in PATH.
	Command []string
	// Dir is the process's working directory; empty: the harness's.
	Dir string
	// StateFile is the durable state's path, passed in IDEMCHECK_STATE_FILE.
	// Empty: a file in a new temporary directory that Close removes, so
	// every store starts empty.
	StateFile string
	// Timeout bounds every request; zero means DefaultTimeout.
	Timeout time.Duration
	// Env is added to the harness's environment.
	Env []string
}

// ParseCommand splits a command line on white space: "node inbox.js" is
// argv ["node", "inbox.js"]. There is no quoting; wrap anything fancier in a
// script.
func ParseCommand(line string) ([]string, error) { return lineproc.Argv("procstore", line) }

// Error is a failure of the adapter process itself, as opposed to an answer
// of the store it implements: it hung, died, or answered garbage.
type Error struct {
	// Command is the adapter's command line.
	Command string
	// Request and Op identify the request that went unanswered.
	Request int64
	Op      string
	// Reason says what happened.
	Reason string
}

// Error implements error.
func (e *Error) Error() string {
	return fmt.Sprintf("procstore: adapter %q failed on request %d (%s): %s; the process was killed and this store is unusable",
		e.Command, e.Request, e.Op, e.Reason)
}

// Store is a store.Store served by an adapter process. Requests are sent one
// at a time; it is safe for concurrent use.
type Store struct {
	opts    Options
	command string
	clock   clock.Source
	env     []string
	tmpDir  string

	mu     sync.Mutex
	p      *lineproc.Proc // nil: not running; the next request starts it
	gen    int            // counts kills: a unit of work lives in one generation
	nextID int64
	broken error // set for good by an adapter failure or Close
}

var (
	_ store.Store  = (*Store)(nil)
	_ store.Closer = (*Store)(nil)
)

// Open starts the adapter, telling time by c, and checks that it answers a
// first request. An adapter that cannot start, hangs, dies or answers
// garbage is reported here, with its command and stderr.
func Open(ctx context.Context, opts Options, c clock.Source) (*Store, error) {
	if len(opts.Command) == 0 {
		return nil, errors.New("procstore: no command")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	s := &Store{opts: opts, command: strings.Join(opts.Command, " "), clock: c}
	if opts.StateFile == "" {
		dir, err := os.MkdirTemp("", "idemcheck-proc-")
		if err != nil {
			return nil, fmt.Errorf("procstore: state directory: %w", err)
		}
		s.tmpDir = dir
		s.opts.StateFile = filepath.Join(dir, "state.json")
	}
	s.env = append(append(os.Environ(), opts.Env...), StateFileEnv+"="+s.opts.StateFile)
	if _, err := s.NowMs(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// StateFile returns the path of the adapter's durable state.
func (s *Store) StateFile() string { return s.opts.StateFile }

// Close implements store.Closer: it kills the process and removes the state
// file if Open chose it.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killLocked()
	if s.broken == nil {
		s.broken = fmt.Errorf("procstore: adapter %q: store closed", s.command)
	}
	if s.tmpDir != "" {
		dir := s.tmpDir
		s.tmpDir = ""
		return os.RemoveAll(dir)
	}
	return nil
}

// Restart kills the adapter process, as a crash does; the next request
// starts it again over its state file. Open units of work are lost.
func (s *Store) Restart() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killLocked()
}

func (s *Store) killLocked() {
	if s.p != nil {
		s.p.Kill()
		s.p = nil
	}
	s.gen++
}

// errLost is the answer to a unit of work whose process has been killed.
var errLost = errors.New("procstore: the unit of work was lost: the adapter process was killed (a crash) after it began")

// anyGen lets a request go to whichever process is running.
const anyGen = -1

// reply is an answer with what it was an answer to.
type reply struct {
	response
	gen   int
	nowMs int64
}

// call sends one request and returns the answer. gen, unless anyGen, is the
// generation the request belongs to (a unit of work's). An error answer of
// the store comes back as an error that wraps the contract's errors; a
// failure of the process as an *Error, after which the store is unusable.
func (s *Store) call(ctx context.Context, op string, gen int, fields map[string]any) (reply, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken != nil {
		return reply{}, s.broken
	}
	if gen != anyGen && gen != s.gen {
		return reply{}, errLost
	}
	if s.p == nil {
		p, err := lineproc.Start(s.opts.Command, s.opts.Dir, s.env)
		if err != nil {
			s.broken = &Error{Command: s.command, Request: s.nextID + 1, Op: op, Reason: "could not start: " + err.Error()}
			return reply{}, s.broken
		}
		s.p = p
	}
	s.nextID++
	id, now := s.nextID, s.clock.NowMs()
	req := map[string]any{"id": id, "op": op, "nowMs": now}
	for k, v := range fields {
		req[k] = v
	}
	line, err := lineproc.Marshal(req)
	if err != nil {
		return reply{}, fmt.Errorf("procstore: encode %s: %w", op, err)
	}
	ans, err := s.p.RoundTrip(ctx, line, s.opts.Timeout)
	if err != nil {
		if ctx.Err() != nil {
			// The caller gave up, not the adapter: the process is killed
			// (its answer would come out of turn) but may start again.
			s.killLocked()
			return reply{}, fmt.Errorf("procstore: adapter %q, request %d (%s): %w", s.command, id, op, err)
		}
		return reply{}, s.failLocked(id, op, s.p.WithStderr(err).Error())
	}
	r, err := decode(ans, id, op)
	if err != nil {
		return reply{}, s.failLocked(id, op, s.p.WithStderr(err).Error())
	}
	out := reply{response: r, gen: s.gen, nowMs: now}
	if r.Error != "" {
		return out, answerError(op, r)
	}
	return out, nil
}

// failLocked kills the process and makes the store unusable.
func (s *Store) failLocked(id int64, op, reason string) error {
	s.killLocked()
	s.broken = &Error{Command: s.command, Request: id, Op: op, Reason: reason}
	return s.broken
}

// answerError turns a store's error answer into the contract's errors.
func answerError(op string, r response) error {
	switch r.Kind {
	case KindStale:
		return fmt.Errorf("%w (adapter: %s)", store.ErrStaleToken, r.Error)
	case KindNotHeld:
		return fmt.Errorf("%w (adapter: %s)", store.ErrNotHeld, r.Error)
	}
	return fmt.Errorf("procstore: %s refused by the adapter: %s (kind %q)", op, r.Error, r.Kind)
}

// Claim implements store.Store.
func (s *Store) Claim(ctx context.Context, key store.Key, leaseMs int64) (store.Claim, error) {
	r, err := s.call(ctx, OpClaim, anyGen, map[string]any{"key": key, "leaseMs": leaseMs})
	if err != nil {
		return store.Claim{}, err
	}
	return *r.Claim, nil
}

// Fail implements store.Store.
func (s *Store) Fail(ctx context.Context, key store.Key, token uint64, reason string) error {
	_, err := s.call(ctx, OpFail, anyGen, map[string]any{"key": key, "token": token, "reason": reason})
	return err
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, key store.Key) (store.Record, bool, error) {
	r, err := s.call(ctx, OpGet, anyGen, map[string]any{"key": key})
	if err != nil || !r.Found {
		return store.Record{}, false, err
	}
	return *r.Record, true, nil
}

// Cleanup implements store.Store. The adapter decides by the request's
// nowMs, the store's time.
func (s *Store) Cleanup(ctx context.Context, retentionMs int64) ([]store.Key, error) {
	r, err := s.call(ctx, OpCleanup, anyGen, map[string]any{"retentionMs": retentionMs})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(r.Keys, compareKeys)
	return r.Keys, nil
}

// Records implements store.Store. The adapter may list them in any order.
func (s *Store) Records(ctx context.Context) ([]store.Record, error) {
	r, err := s.call(ctx, OpRecords, anyGen, nil)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(r.Records, func(a, b store.Record) int { return compareKeys(a.Key, b.Key) })
	return r.Records, nil
}

// Ledger implements store.Store. The adapter may list entries in any order.
func (s *Store) Ledger(ctx context.Context) ([]store.Entry, error) {
	r, err := s.call(ctx, OpLedger, anyGen, nil)
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(r.Entries, func(a, b store.Entry) int {
		return cmp.Or(cmp.Compare(a.Consumer, b.Consumer), cmp.Compare(a.EventID, b.EventID))
	})
	return r.Entries, nil
}

// NowMs implements store.Store. The adapter must answer the time it was
// sent: an implementation with a clock of its own would make runs
// irreproducible, so a different answer is a protocol failure.
func (s *Store) NowMs(ctx context.Context) (int64, error) {
	r, err := s.call(ctx, OpNow, anyGen, nil)
	if err != nil {
		return 0, err
	}
	if *r.NowMs != r.nowMs {
		s.mu.Lock()
		defer s.mu.Unlock()
		return 0, s.failLocked(s.nextID, OpNow, fmt.Sprintf("answered nowMs %d to a request that said nowMs %d: the store's time is the one the harness sends", *r.NowMs, r.nowMs))
	}
	return r.nowMs, nil
}

// Reset asks the adapter to drop all its state, durable and in memory.
func (s *Store) Reset(ctx context.Context) error {
	_, err := s.call(ctx, OpReset, anyGen, nil)
	return err
}

func compareKeys(a, b store.Key) int {
	return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Consumer, b.Consumer), cmp.Compare(a.ID, b.ID))
}
