// The consumer side of the idemcheck consumer protocol
// (impl/adapter/consumerproc/PROTOCOL.md), for Node.js 20 or later, with no
// dependencies. A team writes its handler as an async function of the
// delivered message and a small database handle, and calls serve(handler):
//
//   serve(async (msg, db) => {
//     await db.begin();
//     await db.exec('INSERT INTO ledger (event_id, amount_cents) VALUES (?, ?)',
//       msg.eventId, msg.event.amountCents);
//     await db.commit();
//   });
//
// serve's second argument declares, for the harness, the schema to create
// in each scenario's fresh database and the query that reads the effects
// (see the protocol's hello); production ignores it.
//
// Returning acks the delivery; throwing nacks it (a transient error, the
// broker redelivers it) unless the error is a Poison, which sends it to the
// dead-letter queue. Every db call is one request to the harness, which runs
// it on its database: in production the same handler would get a handle on
// a real driver with the same five methods.
'use strict';

const readline = require('readline');

const PROTOCOL = 1;

// DbError is a statement the database refused; code is 'unique_violation',
// 'error' or 'bad_request'.
class DbError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

// Poison marks a message that can never succeed.
class Poison extends Error {}

const isUniqueViolation = (err) => err instanceof DbError && err.code === 'unique_violation';

function serve(handle, declaration = {}) {
  const queue = [];
  const waiters = [];
  const rl = readline.createInterface({ input: process.stdin });
  rl.on('line', (line) => {
    const m = JSON.parse(line);
    if (waiters.length > 0) waiters.shift()(m);
    else queue.push(m);
  });
  rl.on('close', () => process.exit(0));
  const next = () => (queue.length > 0 ? Promise.resolve(queue.shift()) : new Promise((r) => waiters.push(r)));
  const send = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');

  (async () => {
    const hello = await next();
    if (hello.type !== 'hello') throw new Error(`expected hello, got ${hello.type}`);
    send({ type: 'hello', protocol: PROTOCOL, ...declaration });
    for (;;) {
      const d = await next();
      if (d.type !== 'deliver') throw new Error(`expected deliver, got ${d.type}`);
      const delivery = d.delivery;
      const call = async (req) => {
        send({ ...req, delivery });
        const r = await next();
        if (!r.ok) throw new DbError(r.code, r.error);
        return r;
      };
      const db = {
        begin: () => call({ type: 'begin' }),
        commit: () => call({ type: 'commit' }),
        rollback: () => call({ type: 'rollback' }),
        // exec runs a statement and resolves to the number of rows it changed.
        exec: async (sql, ...args) => (await call({ type: 'exec', sql, args })).rowsAffected,
        // query resolves to the rows as objects keyed by column name.
        query: async (sql, ...args) => {
          const r = await call({ type: 'query', sql, args });
          return r.rows.map((row) => Object.fromEntries(r.columns.map((c, i) => [c, row[i]])));
        },
        // point marks a call to another system (a cache, an HTTP service)
        // as a place where the harness may switch workers or crash this one.
        point: (what) => call({ type: 'point', what }),
        // nowMs is the harness's time at delivery: use it, not Date.now().
        nowMs: d.nowMs,
      };
      let done;
      try {
        await handle(d.message, db);
        done = { type: 'done', outcome: 'ack' };
      } catch (err) {
        const text = String((err && err.message) || err);
        done = { type: 'done', outcome: err instanceof Poison ? 'poison' : 'nack', error: text };
      }
      send({ ...done, delivery });
    }
  })().catch((err) => {
    process.stderr.write(`${err.stack || err}\n`);
    process.exit(1);
  });
}

module.exports = { serve, DbError, Poison, isUniqueViolation };
