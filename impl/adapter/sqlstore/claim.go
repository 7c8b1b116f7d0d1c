package sqlstore

import (
	"context"
	"fmt"

	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// maxClaimRounds bounds the retries of a first claim that lost the insert
// race (PostgreSQL only: SQLite serialises writers). Each round sees a
// committed row the round before did not, so two are enough unless the row
// keeps being deleted and inserted again; then the claim gives up.
const maxClaimRounds = 16

// Claim implements store.Store. The key's row is locked before anything is
// decided; a missing row is inserted first (with no token yet) so that the
// token, too, is drawn under the row's lock.
func (s *Store) Claim(ctx context.Context, key store.Key, leaseMs int64) (store.Claim, error) {
	var out store.Claim
	err := s.writeTx(ctx, func(c Conn) error {
		for range maxClaimRounds {
			r, found, err := s.lockRow(ctx, c, key)
			if err != nil {
				return err
			}
			now, err := s.nowOn(ctx, c)
			if err != nil {
				return err
			}
			out = store.Claim{AtMs: now}
			attempts, takeover := 1, false
			if found {
				switch {
				case r.state == store.Processed:
					out.Outcome = store.AlreadyProcessed
					return errRollback
				case r.state == store.Processing && now < r.leaseUntil:
					out.Outcome = store.Locked
					return errRollback
				}
				attempts, takeover = r.attempts+1, r.state == store.Processing
			} else {
				n, err := c.Exec(ctx, s.q.insertClaim, key.Tenant, key.Consumer, key.ID, now, now+leaseMs)
				if err != nil {
					return err
				}
				if n == 0 {
					continue // a concurrent first claim inserted it: lock that row
				}
			}
			var token int64
			if err := queryOne(ctx, c, s.q.nextToken, nil, &token); err != nil {
				return fmt.Errorf("draw token: %w", err)
			}
			n, err := c.Exec(ctx, s.q.acquire, key.Tenant, key.Consumer, key.ID, now, attempts, token, now+leaseMs)
			if err != nil {
				return err
			}
			if n != 1 {
				return fmt.Errorf("acquire updated %d rows", n)
			}
			out = store.Claim{Outcome: store.Acquired, Token: uint64(token), Attempt: attempts, Takeover: takeover, AtMs: now}
			return nil
		}
		return fmt.Errorf("row inserted and deleted under the claim %d times", maxClaimRounds)
	})
	if err != nil {
		return store.Claim{}, fmt.Errorf("%s: claim %s: %w", s.d.Name, key, err)
	}
	return out, nil
}

// Fail implements store.Store.
func (s *Store) Fail(ctx context.Context, key store.Key, token uint64, reason string) error {
	err := s.writeTx(ctx, func(c Conn) error {
		if err := s.checkHeld(ctx, c, key, token); err != nil {
			return err
		}
		_, err := c.Exec(ctx, s.q.fail, key.Tenant, key.Consumer, key.ID, reason)
		return err
	})
	if err != nil {
		return fmt.Errorf("%s: fail %s: %w", s.d.Name, key, err)
	}
	return nil
}
