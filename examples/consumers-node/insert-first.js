#!/usr/bin/env node
// Credits the ledger once per (consumer group, event): insert-first.
//
// In one transaction: INSERT the processed row first; its primary key makes
// a second insert of the same event fail with a unique violation, which
// means "already done, skip". The ledger row goes in the same transaction,
// so the effect and the mark commit together or not at all.
//
// Its SQL runs on SQLite and PostgreSQL alike ($1 placeholders), and it
// keeps nothing in memory, so it declares reset: true and the harness
// reuses its processes from worker to worker.
'use strict';

const { serve, Poison, isUniqueViolation } = require('./idemcheck');

const schema = `
  CREATE TABLE processed_events (consumer_group TEXT NOT NULL, event_id TEXT NOT NULL, PRIMARY KEY (consumer_group, event_id));
  CREATE TABLE ledger (event_id TEXT NOT NULL, user_id TEXT NOT NULL, amount_cents INTEGER NOT NULL);`;

serve(async (msg, db) => {
  if (msg.event.amountCents <= 0) {
    throw new Poison(`order ${msg.event.orderId}: amount ${msg.event.amountCents}`);
  }
  await db.begin();
  try {
    try {
      await db.exec('INSERT INTO processed_events (consumer_group, event_id) VALUES ($1, $2)', msg.group, msg.eventId);
    } catch (err) {
      if (isUniqueViolation(err)) {
        await db.rollback();
        return; // a duplicate delivery: ack it
      }
      throw err;
    }
    await db.exec(
      'INSERT INTO ledger (event_id, user_id, amount_cents) VALUES ($1, $2, $3)',
      msg.eventId, msg.event.userId, msg.event.amountCents,
    );
    await db.commit();
  } catch (err) {
    await db.rollback().catch(() => {});
    throw err;
  }
}, { schema, effects: 'SELECT event_id, amount_cents FROM ledger', reset: true });
