#!/usr/bin/env node
// Credits the ledger, then marks the event processed. BROKEN on purpose:
// the effect and the mark are separate commits, so a crash between them (or
// before the ack) leaves an effect without a mark; the broker redelivers and
// the event is credited twice.
'use strict';

const { serve, Poison } = require('./idemcheck');

const schema = `
  CREATE TABLE processed_events (consumer_group TEXT NOT NULL, event_id TEXT NOT NULL, PRIMARY KEY (consumer_group, event_id));
  CREATE TABLE ledger (event_id TEXT NOT NULL, user_id TEXT NOT NULL, amount_cents INTEGER NOT NULL);`;

serve(async (msg, db) => {
  if (msg.event.amountCents <= 0) {
    throw new Poison(`order ${msg.event.orderId}: amount ${msg.event.amountCents}`);
  }
  const seen = await db.query(
    'SELECT 1 FROM processed_events WHERE consumer_group = $1 AND event_id = $2', msg.group, msg.eventId,
  );
  if (seen.length > 0) return;
  await db.exec(
    'INSERT INTO ledger (event_id, user_id, amount_cents) VALUES ($1, $2, $3)',
    msg.eventId, msg.event.userId, msg.event.amountCents,
  );
  await db.exec('INSERT INTO processed_events (consumer_group, event_id) VALUES ($1, $2)', msg.group, msg.eventId);
}, { schema, effects: 'SELECT event_id, amount_cents FROM ledger', reset: true });
