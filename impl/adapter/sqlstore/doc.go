// Package sqlstore is the store contract implemented once over SQL, for the
// SQLite (impl/sqlitestore) and PostgreSQL (impl/pgstore) stores. They differ
// only in a Dialect (the statements that lock, number and time) and a Backend
// (how connections are made, pooled and crashed).
//
// Tables: inbox, keyed by (tenant, consumer, event_id), holds the claim
// records; ledger, unique on (consumer, event_id), holds the effects; a token
// sequence issues fencing tokens for the whole store, so a key claimed again
// after Cleanup deleted its record still gets a greater token.
//
// Transactions:
//   - Claim and Fail are short write transactions that lock the key's row
//     first and decide under that lock, so there is no check-then-act race.
//     A token is drawn only while the row is locked, which is what makes it
//     greater than every token issued for the key before.
//   - Begin pins a connection and opens a transaction but neither reads nor
//     locks: the deterministic runner steps every worker on one goroutine, so
//     an open unit of work must never hold a lock another call waits for.
//     Credit stages in memory. Commit locks the row, checks the fencing token,
//     inserts the ledger rows (ON CONFLICT DO NOTHING, counting the ignored
//     ones), marks the record processed and commits — one transaction.
//   - Crash closes the unit's connection under its open transaction; the
//     database rolls it back, as it would for a worker process that died.
//
// Time: with a Clock configured, its reading is the store's time and is
// passed to the statements as a parameter (deterministic runs use a virtual
// clock); without one, the database's own clock is. Cleanup computes its
// cutoff from the store's time, never from a caller's.
package sqlstore
