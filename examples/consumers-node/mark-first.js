#!/usr/bin/env node
// Marks the event processed, then credits it. BROKEN on purpose: the mark
// and the credit are separate commits, so a crash between them leaves the
// mark without the credit; the broker redelivers, the handler sees the
// mark, skips, and the credit is lost for good.
'use strict';

const { serve, Poison, isUniqueViolation } = require('./idemcheck');

const schema = `
  CREATE TABLE processed_events (consumer_group TEXT NOT NULL, event_id TEXT NOT NULL, PRIMARY KEY (consumer_group, event_id));
  CREATE TABLE ledger (event_id TEXT NOT NULL, user_id TEXT NOT NULL, amount_cents INTEGER NOT NULL);`;

serve(async (msg, db) => {
  if (msg.event.amountCents <= 0) {
    throw new Poison(`order ${msg.event.orderId}: amount ${msg.event.amountCents}`);
  }
  try {
    await db.exec('INSERT INTO processed_events (consumer_group, event_id) VALUES ($1, $2)', msg.group, msg.eventId);
  } catch (err) {
    if (isUniqueViolation(err)) return; // marked already: a duplicate
    throw err;
  }
  await db.exec(
    'INSERT INTO ledger (event_id, user_id, amount_cents) VALUES ($1, $2, $3)',
    msg.eventId, msg.event.userId, msg.event.amountCents,
  );
}, { schema, effects: 'SELECT event_id, amount_cents FROM ledger', reset: true });
