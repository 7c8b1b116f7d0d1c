package mutant

import (
	"context"
	"slices"

	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/reference/memstore"
)

// dedupeKeyWithoutConsumer drops the consumer from every key it is given.
type dedupeKeyWithoutConsumer struct{ *memstore.Store }

// NewDedupeKeyWithoutConsumer is a store whose dedupe key drops the
// consumer: the first consumer group to process an event marks it processed
// for every group, and the others skip their effects.
func NewDedupeKeyWithoutConsumer(c clock.Source) store.Store {
	return dedupeKeyWithoutConsumer{memstore.New(c)}
}

func unscoped(k store.Key) store.Key { k.Consumer = ""; return k }

func (u dedupeKeyWithoutConsumer) Claim(ctx context.Context, key store.Key, leaseMs int64) (store.Claim, error) {
	return u.Store.Claim(ctx, unscoped(key), leaseMs)
}

func (u dedupeKeyWithoutConsumer) Begin(ctx context.Context, key store.Key, token uint64) (store.Tx, error) {
	return u.Store.Begin(ctx, unscoped(key), token)
}

func (u dedupeKeyWithoutConsumer) Fail(ctx context.Context, key store.Key, token uint64, reason string) error {
	return u.Store.Fail(ctx, unscoped(key), token, reason)
}

func (u dedupeKeyWithoutConsumer) Get(ctx context.Context, key store.Key) (store.Record, bool, error) {
	return u.Store.Get(ctx, unscoped(key))
}

// leaseless holds a claim until its holder settles it, however long.
type leaseless struct{ *memstore.Store }

// forever is a lease no scenario outlives.
const forever = int64(1) << 60

// NewClaimLeftInProcessingStore is the store half of claim-left-in-processing:
// its "processing" is a flag without a lease, so a claim is held until its
// holder commits or fails it.
func NewClaimLeftInProcessingStore(c clock.Source) store.Store { return leaseless{memstore.New(c)} }

// Claim ignores leaseMs: the claim never expires.
func (n leaseless) Claim(ctx context.Context, key store.Key, _ int64) (store.Claim, error) {
	return n.Store.Claim(ctx, key, forever)
}

// unconstrainedLedger is a store whose ledger has no unique constraint.
type unconstrainedLedger struct {
	*memstore.Store
	repeats []store.Entry // rows the missing constraint let in a second time
}

// NewDedupeInMemoryOnlyStore is the store half of dedupe-in-memory-only: its
// ledger table has no unique constraint (see Append), so nothing but the
// consumer's memory stops a second credit.
func NewDedupeInMemoryOnlyStore(c clock.Source) store.Store {
	return &unconstrainedLedger{Store: memstore.New(c)}
}

// Append inserts e into a ledger with no unique constraint.
func (u *unconstrainedLedger) Append(ctx context.Context, e store.Entry) error {
	inserted, err := u.InsertEntry(ctx, e)
	if err == nil && !inserted {
		u.repeats = append(u.repeats, e)
	}
	return err
}

func (u *unconstrainedLedger) Ledger(ctx context.Context) ([]store.Entry, error) {
	out, err := u.Store.Ledger(ctx)
	out = append(out, u.repeats...)
	slices.SortStableFunc(out, memstore.CompareEntries)
	return out, err
}

// failedClaimStaysLocked re-acquires an expired lease but never a failed
// record.
type failedClaimStaysLocked struct{ *memstore.Store }

// NewFailedClaimStaysLocked is a store whose claim takes over an expired
// lease but forgets the failed records: its "insert the claim if absent,
// or take it over if its lease ran out" leaves out the rows a failed
// attempt released. After one transient failure every redelivery is
// answered Locked, is nacked, and the event ends in the DLQ although a
// retry would have credited it. Every event is still credited or
// dead-lettered and no record stays in processing: only
// nothing-lost/healthy-applied catches it.
func NewFailedClaimStaysLocked(c clock.Source) store.Store {
	return failedClaimStaysLocked{memstore.New(c)}
}

// Claim answers Locked for a key whose record a failed attempt released.
func (f failedClaimStaysLocked) Claim(ctx context.Context, key store.Key, leaseMs int64) (store.Claim, error) {
	rec, found, err := f.Get(ctx, key)
	if err != nil {
		return store.Claim{}, err
	}
	if found && rec.State == store.Failed {
		now, err := f.NowMs(ctx)
		return store.Claim{Outcome: store.Locked, AtMs: now}, err
	}
	return f.Store.Claim(ctx, key, leaseMs)
}
