package redisstore

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// DefaultAddr is where Redis is expected when no address is configured.
const DefaultAddr = "127.0.0.1:6379"

// casRetries bounds the retries of a compare-and-set that lost to a
// concurrent writer. The deterministic runner never loses one; concurrent
// tests may, a few times.
const casRetries = 100

// Store is the claim store over Redis. It is safe for concurrent use (the
// client pools connections), with the caveats of the package doc.
type Store struct {
	rdb    *redis.Client
	owned  bool // Close closes rdb
	prefix string
	clock  clock.Source

	records, ledger, token string
}

var (
	_ store.Store  = (*Store)(nil)
	_ store.Closer = (*Store)(nil)
)

// Open connects to the Redis at addr ("host:port" or a redis:// URL) and
// returns an empty store under a fresh random key prefix, telling time by c.
// Close drops the prefix's keys and the connection.
func Open(ctx context.Context, addr string, c clock.Source) (*Store, error) {
	if addr == "" {
		addr = DefaultAddr
	}
	opts := &redis.Options{Addr: addr}
	if strings.Contains(addr, "://") {
		var err error
		if opts, err = redis.ParseURL(addr); err != nil {
			return nil, fmt.Errorf("redisstore: address %q: %w", addr, err)
		}
	}
	// RESP2 and no client identity or maintenance notifications: the store
	// needs nothing newer than Redis 6, and the extras only log noise
	// against servers that lack them.
	opts.Protocol = 2
	opts.DisableIdentity = true
	opts.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	// No silent retries: a write retried after a lost reply may land twice,
	// and a run must be decided by its scenario, not by the network. One
	// dial attempt so an absent Redis is reported at once.
	opts.MaxRetries = -1
	opts.DialerRetries = 1
	rdb := redis.NewClient(opts)
	if err := rdb.Ping(ctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, fmt.Errorf("redisstore: cannot reach Redis at %s: %w", opts.Addr, err)
	}
	prefix, err := freshPrefix()
	if err != nil {
		_ = rdb.Close()
		return nil, err
	}
	s := New(rdb, prefix, c)
	s.owned = true
	return s, nil
}

// New returns a store over an existing client under key prefix, telling time
// by c. The caller keeps the client: Close drops the prefix's keys only.
func New(rdb *redis.Client, prefix string, c clock.Source) *Store {
	return &Store{
		rdb: rdb, prefix: prefix, clock: c,
		records: prefix + "records", ledger: prefix + "ledger", token: prefix + "token",
	}
}

// freshPrefix names a new run's keys. It is random because runs of several
// test processes share one Redis; it never appears in a trace.
func freshPrefix() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("redisstore: key prefix: %w", err)
	}
	return "idemcheck:" + hex.EncodeToString(b) + ":", nil
}

// Prefix returns the key prefix of the store's keys.
func (s *Store) Prefix() string { return s.prefix }

// Close implements store.Closer: it deletes the store's keys (the run's
// state), then closes the connection if Open made it.
func (s *Store) Close() error {
	err := s.rdb.Del(context.Background(), s.records, s.ledger, s.token).Err()
	if s.owned {
		err = errors.Join(err, s.rdb.Close())
	}
	if err != nil {
		return fmt.Errorf("redisstore: close: %w", err)
	}
	return nil
}

// recordField is a record's field in the records hash. JSON keeps the three
// parts apart whatever characters they hold.
func recordField(k store.Key) string {
	b, _ := json.Marshal([]string{k.Tenant, k.Consumer, k.ID})
	return string(b)
}

func entryField(e store.Entry) string {
	b, _ := json.Marshal([]string{e.Consumer, e.EventID})
	return string(b)
}

// readRecord reads key's record through cmd (the client or a watching Tx).
func (s *Store) readRecord(ctx context.Context, cmd redis.Cmdable, key store.Key) (store.Record, bool, error) {
	raw, err := cmd.HGet(ctx, s.records, recordField(key)).Bytes()
	if errors.Is(err, redis.Nil) {
		return store.Record{}, false, nil
	}
	if err != nil {
		return store.Record{}, false, fmt.Errorf("redisstore: read %s: %w", key, err)
	}
	var r store.Record
	if err := json.Unmarshal(raw, &r); err != nil {
		return store.Record{}, false, fmt.Errorf("redisstore: decode record %s: %w", key, err)
	}
	return r, true, nil
}

func encode(v any) string {
	b, _ := json.Marshal(v) // records and entries always encode
	return string(b)
}

// compareAndSet runs decide on key's record under WATCH and writes what it
// returns (nil: nothing) in MULTI/EXEC, retrying when another writer
// changed the records in between.
func (s *Store) compareAndSet(ctx context.Context, key store.Key, decide func(tx *redis.Tx, r store.Record, ok bool) (*store.Record, error)) error {
	for range casRetries {
		err := s.rdb.Watch(ctx, func(tx *redis.Tx) error {
			r, ok, err := s.readRecord(ctx, tx, key)
			if err != nil {
				return err
			}
			next, err := decide(tx, r, ok)
			if err != nil || next == nil {
				return err
			}
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.HSet(ctx, s.records, recordField(key), encode(next))
				return nil
			})
			return err
		}, s.records)
		if !errors.Is(err, redis.TxFailedErr) {
			return err
		}
	}
	return fmt.Errorf("redisstore: %s: gave up after %d conflicting writes", key, casRetries)
}

// Claim implements store.Store: set-if-absent, where a failed record or an
// expired lease counts as absent.
func (s *Store) Claim(ctx context.Context, key store.Key, leaseMs int64) (store.Claim, error) {
	var out store.Claim
	err := s.compareAndSet(ctx, key, func(tx *redis.Tx, r store.Record, ok bool) (*store.Record, error) {
		now := s.clock.NowMs()
		switch {
		case ok && r.State == store.Processed:
			out = store.Claim{Outcome: store.AlreadyProcessed, AtMs: now}
			return nil, nil
		case ok && r.State == store.Processing && now < r.LeaseUntilMs:
			out = store.Claim{Outcome: store.Locked, AtMs: now}
			return nil, nil
		}
		token, err := tx.Incr(ctx, s.token).Uint64()
		if err != nil {
			return nil, fmt.Errorf("redisstore: next token: %w", err)
		}
		takeover := ok && r.State == store.Processing
		next := store.Record{Key: key, State: store.Processing, StartedAtMs: now, Attempts: r.Attempts + 1,
			Token: token, LeaseUntilMs: now + leaseMs, LastError: r.LastError}
		out = store.Claim{Outcome: store.Acquired, Token: token, Attempt: next.Attempts, Takeover: takeover, AtMs: now}
		return &next, nil
	})
	if err != nil {
		return store.Claim{}, err
	}
	return out, nil
}

// checkHeld is the fencing check: processing under exactly token.
func checkHeld(r store.Record, ok bool, key store.Key, token uint64) error {
	if !ok || r.State != store.Processing {
		return fmt.Errorf("%w: %s", store.ErrNotHeld, key)
	}
	if r.Token != token {
		return fmt.Errorf("%w: %s holds token %d, caller has %d", store.ErrStaleToken, key, r.Token, token)
	}
	return nil
}

// Fail implements store.Store, as a compare-and-set on the token.
func (s *Store) Fail(ctx context.Context, key store.Key, token uint64, reason string) error {
	return s.compareAndSet(ctx, key, func(_ *redis.Tx, r store.Record, ok bool) (*store.Record, error) {
		if err := checkHeld(r, ok, key, token); err != nil {
			return nil, err
		}
		r.State, r.LastError, r.LeaseUntilMs = store.Failed, reason, 0
		return &r, nil
	})
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, key store.Key) (store.Record, bool, error) {
	return s.readRecord(ctx, s.rdb, key)
}

// Records implements store.Store.
func (s *Store) Records(ctx context.Context) ([]store.Record, error) {
	all, err := s.rdb.HGetAll(ctx, s.records).Result()
	if err != nil {
		return nil, fmt.Errorf("redisstore: records: %w", err)
	}
	out := make([]store.Record, 0, len(all))
	for f, raw := range all {
		var r store.Record
		if err := json.Unmarshal([]byte(raw), &r); err != nil {
			return nil, fmt.Errorf("redisstore: decode record %s: %w", f, err)
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b store.Record) int { return compareKeys(a.Key, b.Key) })
	return out, nil
}

// Ledger implements store.Store.
func (s *Store) Ledger(ctx context.Context) ([]store.Entry, error) {
	all, err := s.rdb.HGetAll(ctx, s.ledger).Result()
	if err != nil {
		return nil, fmt.Errorf("redisstore: ledger: %w", err)
	}
	out := make([]store.Entry, 0, len(all))
	for f, raw := range all {
		var e store.Entry
		if err := json.Unmarshal([]byte(raw), &e); err != nil {
			return nil, fmt.Errorf("redisstore: decode ledger entry %s: %w", f, err)
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b store.Entry) int {
		return cmp.Or(cmp.Compare(a.Consumer, b.Consumer), cmp.Compare(a.EventID, b.EventID))
	})
	return out, nil
}

// Cleanup implements store.Store, by the store's clock. A processed record
// never changes again, so deleting what was read as processed is safe
// without a compare-and-set.
func (s *Store) Cleanup(ctx context.Context, retentionMs int64) ([]store.Key, error) {
	recs, err := s.Records(ctx)
	if err != nil {
		return nil, err
	}
	cutoff := s.clock.NowMs() - retentionMs
	var removed []store.Key
	var fields []string
	for _, r := range recs {
		if r.State == store.Processed && r.FinishedAtMs <= cutoff {
			removed = append(removed, r.Key)
			fields = append(fields, recordField(r.Key))
		}
	}
	if len(fields) > 0 {
		if err := s.rdb.HDel(ctx, s.records, fields...).Err(); err != nil {
			return nil, fmt.Errorf("redisstore: cleanup: %w", err)
		}
	}
	return removed, nil
}

// NowMs implements store.Store.
func (s *Store) NowMs(context.Context) (int64, error) { return s.clock.NowMs(), nil }

func compareKeys(a, b store.Key) int {
	return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Consumer, b.Consumer), cmp.Compare(a.ID, b.ID))
}
