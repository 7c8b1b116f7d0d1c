-- 0003: settings the consumer reads; the values hold what a naive splitter
-- trips on: 'quotes'' within quotes', a ';', comment markers and $$.
CREATE TABLE consumer_settings (
	name  TEXT PRIMARY KEY,
	value TEXT NOT NULL
);
INSERT INTO consumer_settings (name, value) VALUES
	('ledger.currency', 'EUR'),
	('ledger.note', 'it''s credited once; -- not a comment /* nor this */ $$ nor this $$');
