package memstore

import (
	"context"

	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// The store's tables, statement by statement (store.Tables): what consumer
// code written straight against a database does. The reference consumer
// never uses them; naive consumers do.
var _ store.Tables = (*Store)(nil)

// InsertEntry implements store.Tables.
func (s *Store) InsertEntry(_ context.Context, e store.Entry) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.insertLocked(e), nil
}

// MarkProcessed implements store.Tables.
func (s *Store) MarkProcessed(_ context.Context, key store.Key) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.markProcessedLocked(key, s.clock.NowMs())
	return nil
}

// PutProcessing implements store.Tables.
func (s *Store) PutProcessing(_ context.Context, key store.Key, leaseMs int64) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.records[key]
	if !ok {
		r = &store.Record{Key: key}
		s.records[key] = r
	}
	return s.acquireLocked(r, leaseMs, s.clock.NowMs()).Token, nil
}

// DeleteProcessedBefore implements store.Tables.
func (s *Store) DeleteProcessedBefore(_ context.Context, cutoffMs int64) ([]store.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.purgeLocked(cutoffMs), nil
}
