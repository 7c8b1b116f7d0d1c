package memstore

import (
	"context"

	"github.com/idemcheck/idemcheck/impl/clock"
	"github.com/idemcheck/idemcheck/impl/store"
)

// UnscopedKeys is a mutant store whose dedupe key drops the consumer: the
// first consumer group to process an event marks it processed for every
// group, and the others skip their effects.
type UnscopedKeys struct{ *Store }

// NewUnscopedKeys returns the unscoped-key mutant.
func NewUnscopedKeys(c clock.Source) *UnscopedKeys { return &UnscopedKeys{New(c)} }

func unscope(k store.Key) store.Key { k.Consumer = ""; return k }

// Claim claims (tenant, key) only.
func (u *UnscopedKeys) Claim(ctx context.Context, key store.Key, leaseMs int64) (store.Claim, error) {
	return u.Store.Claim(ctx, unscope(key), leaseMs)
}

// Begin opens a unit of work on (tenant, key) only.
func (u *UnscopedKeys) Begin(ctx context.Context, key store.Key, token uint64) (store.Tx, error) {
	return u.Store.Begin(ctx, unscope(key), token)
}

// Fail fails (tenant, key) only.
func (u *UnscopedKeys) Fail(ctx context.Context, key store.Key, token uint64, reason string) error {
	return u.Store.Fail(ctx, unscope(key), token, reason)
}

// Get reads (tenant, key) only.
func (u *UnscopedKeys) Get(ctx context.Context, key store.Key) (store.Record, bool, error) {
	return u.Store.Get(ctx, unscope(key))
}

// NoLease is a mutant store whose "processing" is a flag without a lease: a
// claim is held until its holder commits or fails it, however long that is.
type NoLease struct{ *Store }

// NewNoLease returns the lease-less mutant.
func NewNoLease(c clock.Source) *NoLease { return &NoLease{New(c)} }

// forever is a lease no scenario outlives.
const forever = int64(1) << 60

// Claim ignores leaseMs: the claim never expires.
func (n *NoLease) Claim(ctx context.Context, key store.Key, _ int64) (store.Claim, error) {
	return n.Store.Claim(ctx, key, forever)
}
