// The consumer side of the idemcheck consumer protocol
// (impl/adapter/consumerproc/PROTOCOL.md, version 2), for Node.js 20 or
// later, with no dependencies. A team writes its handler as an async
// function of the delivered message and a small database handle, and calls
// serve(handler):
//
//   serve(async (msg, db) => {
//     await db.begin();
//     await db.exec('INSERT INTO ledger (event_id, amount_cents) VALUES ($1, $2)',
//       msg.eventId, msg.event.amountCents);
//     await db.commit();
//   });
//
// serve's second argument declares, for the harness, the schema to create
// in each scenario's fresh database and the query that reads the effects
// (see the protocol's hello); production ignores it. Its `reset` lets the
// harness reuse this process from one worker to the next instead of
// starting a new one (tens of milliseconds each): `true` for a handler
// that keeps nothing in memory between deliveries, or a function that
// drops everything it keeps (a cache, a counter), called on every reset.
// Leave it out and the harness starts a process per worker, as it kills
// one per crash.
//
// Returning acks the delivery; throwing nacks it (a transient error, the
// broker redelivers it) unless the error is a Poison, which sends it to the
// dead-letter queue. Every db call is one request to the harness, which runs
// it on its database: in production the same handler would get a handle on
// a real driver with the same five methods.
'use strict';

const readline = require('readline');

const PROTOCOL = 2;

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
  const { reset, ...declared } = declaration;
  const resets = reset === true || typeof reset === 'function';
  // session counts the resets: a delivery of an earlier session was
  // abandoned by the harness (its worker crashed), and goes nowhere.
  let session = 0;
  let queue = [];
  let waiter = null;
  const rl = readline.createInterface({ input: process.stdin });
  const fail = (err) => {
    process.stderr.write(`${(err && err.stack) || err}\n`);
    process.exit(1);
  };
  rl.on('line', (line) => {
    const m = JSON.parse(line);
    if (m.type === 'reset' && resets) {
      onReset().catch(fail);
      return;
    }
    if (waiter) {
      const w = waiter;
      waiter = null;
      w(m);
    } else queue.push(m);
  });
  rl.on('close', () => process.exit(0));
  const next = () => (queue.length > 0 ? Promise.resolve(queue.shift()) : new Promise((r) => { waiter = r; }));
  const send = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');

  // A reset comes while this process waits for the harness: for the next
  // delivery, or for the result of a request of the delivery in hand. That
  // wait is dropped for good (the handler never resumes: its worker
  // crashed there), the handler's state is dropped, and a new session
  // waits for deliveries.
  const onReset = async () => {
    session++;
    waiter = null;
    queue = [];
    if (typeof reset === 'function') await reset();
    send({ type: 'reset' });
    deliveries(session).catch(fail);
  };

  const deliveries = async (mine) => {
    const live = () => mine === session;
    for (;;) {
      const d = await next();
      if (d.type !== 'deliver') throw new Error(`expected deliver, got ${d.type}`);
      const delivery = d.delivery;
      const call = async (req) => {
        if (!live()) return new Promise(() => {}); // abandoned: never answered
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
        // database is 'sqlite' or 'postgres': SQL that differs between
        // them can tell. Both accept $1, $2, ... placeholders.
        database: d.database,
      };
      let done;
      try {
        await handle(d.message, db);
        done = { type: 'done', outcome: 'ack' };
      } catch (err) {
        const text = String((err && err.message) || err);
        done = { type: 'done', outcome: err instanceof Poison ? 'poison' : 'nack', error: text };
      }
      if (!live()) return;
      send({ ...done, delivery });
    }
  };

  (async () => {
    const hello = await next();
    if (hello.type !== 'hello') throw new Error(`expected hello, got ${hello.type}`);
    // A harness of version 1 gets version 1: no reset, no database.
    const version = Math.min(PROTOCOL, hello.protocol);
    send({ type: 'hello', protocol: version, ...(resets && version >= 2 ? { reset: true } : {}), ...declared });
    await deliveries(session);
  })().catch(fail);
}

module.exports = { serve, DbError, Poison, isUniqueViolation };
