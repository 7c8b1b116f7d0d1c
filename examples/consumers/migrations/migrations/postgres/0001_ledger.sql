-- 0001: the ledger and the consumer's dedupe table.
-- Don't make ledger.event_id unique: the consumer's guard is processed_events;
-- the ledger is append-only, one row per credit.
CREATE TABLE ledger (
	event_id     TEXT   NOT NULL, -- the event's id, as the producer sent it
	user_id      TEXT   NOT NULL,
	amount_cents BIGINT NOT NULL, /* cents; positive (see 0002) */
	currency     TEXT   NOT NULL
);

/* One row per event applied, committed with its ledger row;
   a row here means "done; skip it". */
CREATE TABLE processed_events (
	event_id TEXT PRIMARY KEY
);
