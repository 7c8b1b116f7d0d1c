package sqlstore

import "strings"

// recordColumns are the inbox columns scanRecord reads, in its order.
const recordColumns = "tenant, consumer, event_id, state, started_at, finished_at, attempts, token, lease_until, last_error"

const keyMatch = "tenant = $1 AND consumer = $2 AND event_id = $3"

// queries are the statements of a store, rewritten for its dialect.
type queries struct {
	rewrite func(string) string

	lockRow, nextToken, now string
	insertClaim, acquire    string
	fail, mark              string
	insertEntry             string
	get, records, ledger    string
	cleanup                 string
}

func buildQueries(d Dialect) queries {
	r := strings.NewReplacer("{inbox}", d.Inbox, "{ledger}", d.Ledger, "{tokens}", d.Tokens, "$", d.Placeholder)
	rw := func(q string) string { return r.Replace(q) }
	return queries{
		rewrite:   rw,
		lockRow:   rw(d.LockRow),
		nextToken: rw(d.NextToken),
		now:       rw(d.Now),
		// The row a first claim inserts has no token yet (0): the token is
		// drawn once the row exists, and so is locked, by this transaction.
		insertClaim: rw(`INSERT INTO {inbox} (` + recordColumns + `)
			VALUES ($1, $2, $3, 'processing', $4, 0, 1, 0, $5, '')
			ON CONFLICT (tenant, consumer, event_id) DO NOTHING`),
		acquire: rw(`UPDATE {inbox} SET state = 'processing', started_at = $4, finished_at = 0,
			attempts = $5, token = $6, lease_until = $7 WHERE ` + keyMatch),
		fail: rw(`UPDATE {inbox} SET state = 'failed', last_error = $4, lease_until = 0 WHERE ` + keyMatch),
		mark: rw(`UPDATE {inbox} SET state = 'processed', finished_at = $4, lease_until = 0, last_error = ''
			WHERE ` + keyMatch + ` AND token = $5`),
		insertEntry: rw(`INSERT INTO {ledger} (consumer, event_id, order_id, user_id, amount_cents)
			VALUES ($1, $2, $3, $4, $5) ON CONFLICT (consumer, event_id) DO NOTHING`),
		get:     rw(`SELECT ` + recordColumns + ` FROM {inbox} WHERE ` + keyMatch),
		records: rw(`SELECT ` + recordColumns + ` FROM {inbox}`),
		ledger:  rw(`SELECT consumer, event_id, order_id, user_id, amount_cents FROM {ledger}`),
		cleanup: rw(`DELETE FROM {inbox} WHERE state = 'processed' AND finished_at <= $1
			RETURNING tenant, consumer, event_id`),
	}
}
