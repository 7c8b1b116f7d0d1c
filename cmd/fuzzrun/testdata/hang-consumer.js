#!/usr/bin/env node
// A consumer that answers its hello, then hangs inside every delivery of a
// healthy event: its handler awaits a promise nothing resolves, as a
// handler stuck on a lock or a call that never returns. Poison events are
// refused at once, so that the hang is the handler's and not the event's.
// The harness must report law runs (handler-hangs) with the scenario, as
// for a Go handler that hangs, not a consumer that failed to start.
'use strict';

const path = require('path');
const { serve, Poison } = require(path.join(__dirname, '..', '..', '..', 'examples', 'consumers-node', 'idemcheck'));

const schema = 'CREATE TABLE ledger (event_id TEXT NOT NULL, user_id TEXT NOT NULL, amount_cents INTEGER NOT NULL)';

serve(async (msg, db) => {
  if (msg.event.amountCents <= 0) throw new Poison(`amount ${msg.event.amountCents}`);
  await db.query('SELECT count(*) AS n FROM ledger WHERE event_id = $1', msg.eventId);
  await new Promise(() => {}); // never settles: the delivery hangs here
}, { schema, effects: 'SELECT event_id, amount_cents FROM ledger', reset: true });
