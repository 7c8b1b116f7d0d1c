package memstore

import (
	"github.com/idemcheck/idemcheck/impl/store"
)

// Raw exposes the store's tables without the contract's guards. Naive
// consumers — the mutants — are written against it the way naive code is
// written against a database: separate statements, no fencing, cutoffs
// computed by the caller. The reference consumer never uses it.
type Raw struct{ s *Store }

// Raw returns the unguarded access to s.
func (s *Store) Raw() Raw { return Raw{s} }

// Credit inserts e unless the unique constraint forbids it; it reports
// whether e was inserted.
func (r Raw) Credit(e store.Entry) bool {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	return r.s.insertLocked(e)
}

// Append inserts e into a ledger with no unique constraint.
func (r Raw) Append(e store.Entry) {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	if !r.s.insertLocked(e) {
		r.s.extra = append(r.s.extra, e)
	}
}

// MarkProcessed marks key processed now, with no token check.
func (r Raw) MarkProcessed(key store.Key) {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	r.s.markProcessedLocked(key, r.s.clock.NowMs())
}

// PutProcessing overwrites key's record with a fresh processing claim — the
// "act" of a check-then-act — and returns its token.
func (r Raw) PutProcessing(key store.Key, leaseMs int64) uint64 {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	delete(r.s.records, key)
	return r.s.claimLocked(key, leaseMs, r.s.clock.NowMs()).Token
}

// DeleteProcessedBefore deletes processed records finished at or before
// cutoffMs, a cutoff the caller computed by its own clock.
func (r Raw) DeleteProcessedBefore(cutoffMs int64) []store.Key {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	return r.s.purgeLocked(cutoffMs)
}
