#!/usr/bin/env node
// Dedupes on an in-process LRU of recent event ids. BROKEN on purpose: the
// LRU lives in this process only, so a restart, a second worker or a replay
// of the stream sees an empty one and credits the event again.
//
// The LRU is this process's memory: its reset hook empties it, so that a
// process the harness reuses for another worker starts as empty as a new
// one (without it, the harness's verdicts would depend on which process a
// worker happened to get).
'use strict';

const { serve, Poison } = require('./idemcheck');

const schema = 'CREATE TABLE ledger (event_id TEXT NOT NULL, user_id TEXT NOT NULL, amount_cents INTEGER NOT NULL)';

const capacity = 10000;
const recent = new Map(); // event key -> true, oldest first

serve(async (msg, db) => {
  if (msg.event.amountCents <= 0) {
    throw new Poison(`order ${msg.event.orderId}: amount ${msg.event.amountCents}`);
  }
  const key = `${msg.group}/${msg.eventId}`;
  if (recent.has(key)) return;
  await db.exec(
    'INSERT INTO ledger (event_id, user_id, amount_cents) VALUES ($1, $2, $3)',
    msg.eventId, msg.event.userId, msg.event.amountCents,
  );
  recent.set(key, true);
  if (recent.size > capacity) recent.delete(recent.keys().next().value);
}, { schema, effects: 'SELECT event_id, amount_cents FROM ledger', reset: () => recent.clear() });
