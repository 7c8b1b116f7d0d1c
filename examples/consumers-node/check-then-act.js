#!/usr/bin/env node
// Looks the event up, and if it is new, credits and marks it in one
// transaction. BROKEN on purpose: the processed table has no unique
// constraint and the check runs before the transaction, so two workers
// holding two deliveries of one event both see "new" and both credit it.
'use strict';

const { serve, Poison } = require('./idemcheck');

// No unique constraint on processed_events: nothing stops a second mark.
const schema = `
  CREATE TABLE processed_events (consumer_group TEXT NOT NULL, event_id TEXT NOT NULL);
  CREATE TABLE ledger (event_id TEXT NOT NULL, user_id TEXT NOT NULL, amount_cents INTEGER NOT NULL);`;

serve(async (msg, db) => {
  if (msg.event.amountCents <= 0) {
    throw new Poison(`order ${msg.event.orderId}: amount ${msg.event.amountCents}`);
  }
  const seen = await db.query(
    'SELECT 1 FROM processed_events WHERE consumer_group = $1 AND event_id = $2', msg.group, msg.eventId,
  );
  if (seen.length > 0) return;
  await db.begin();
  try {
    await db.exec(
      'INSERT INTO ledger (event_id, user_id, amount_cents) VALUES ($1, $2, $3)',
      msg.eventId, msg.event.userId, msg.event.amountCents,
    );
    await db.exec('INSERT INTO processed_events (consumer_group, event_id) VALUES ($1, $2)', msg.group, msg.eventId);
    await db.commit();
  } catch (err) {
    await db.rollback().catch(() => {});
    throw err;
  }
}, { schema, effects: 'SELECT event_id, amount_cents FROM ledger', reset: true });
