#!/usr/bin/env node
// lru.js with a lie: it declares reset: true, as if it kept nothing in
// memory, but keeps its LRU across resets. A process the harness reuses
// for another worker then remembers what the previous one credited, and
// the harness's verdicts would depend on which process a worker happened
// to get. The tests (and fuzzrun before a campaign) must catch it: a
// reused process plays a scenario differently from a fresh one.
'use strict';

const { serve } = require('../idemcheck');

const schema = 'CREATE TABLE ledger (event_id TEXT NOT NULL, user_id TEXT NOT NULL, amount_cents INTEGER NOT NULL)';

const recent = new Set(); // event keys this process credited

serve(async (msg, db) => {
  const key = `${msg.group}/${msg.eventId}`;
  if (recent.has(key)) return;
  await db.exec(
    'INSERT INTO ledger (event_id, user_id, amount_cents) VALUES ($1, $2, $3)',
    msg.eventId, msg.event.userId, msg.event.amountCents,
  );
  recent.add(key);
}, { schema, effects: 'SELECT event_id, amount_cents FROM ledger', reset: true });
