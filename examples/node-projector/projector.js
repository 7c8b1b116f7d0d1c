#!/usr/bin/env node
// An order projector in Node.js with no dependencies, speaking the
// idemcheck "projector" protocol, version 1
// (impl/adapter/procparts/PROTOCOL.md): one JSON request per line on stdin,
// one JSON answer per line on stdout.
//
// It consumes OrderCreated, OrderPaid and OrderCancelled, delivered at
// least once and in any order, into each order's status. An event is
// applied only when its HLC stamp is later than the stamp of the event the
// order last applied: a duplicate has the same stamp and a stale event an
// earlier one, so both leave the state as it was, and every replica ends
// where the causal history ends whatever the delivery order.
//
// Environment:
//   PROJECTOR_BUG=lww-timestamp  a deliberate bug, to see the harness catch
//                                it: order by the producer's wall clock
//                                (occurredAtMs, last write wins), which
//                                clock skew reverses
'use strict';

const readline = require('readline');

const bug = process.env.PROJECTOR_BUG || '';
if (!['', 'lww-timestamp'].includes(bug)) {
  process.stderr.write(`projector.js: PROJECTOR_BUG=${bug}: want lww-timestamp\n`);
  process.exit(2);
}

// projectors: handle -> Map(orderId -> {orderId, status, last}).
const projectors = new Map();

const statusOf = { OrderCreated: 'created', OrderPaid: 'paid', OrderCancelled: 'cancelled' };

class Refusal extends Error {
  constructor(kind, message) {
    super(message);
    this.kind = kind;
  }
}

function ordersOf(handle) {
  const p = projectors.get(handle);
  if (!p) throw new Refusal('bad_request', `no open projector ${handle}`);
  return p;
}

// compareHLC orders stamps as the harness does: wall, then the nanosecond
// wall when a clock has one, then logical, then node.
function compareHLC(a, b) {
  const keys = [
    [a.wallMs, b.wallMs],
    [a.wallNs || 0, b.wallNs || 0],
    [a.logical, b.logical],
  ];
  for (const [x, y] of keys) {
    if (x !== y) return x < y ? -1 : 1;
  }
  if (a.node === b.node) return 0;
  return a.node < b.node ? -1 : 1;
}

// newer says whether e is newer than last, and why.
function newer(e, last) {
  if (bug === 'lww-timestamp') {
    return e.occurredAtMs > last.occurredAtMs
      ? [true, `occurredAt ${e.occurredAtMs} > last applied ${last.occurredAtMs}`]
      : [false, `occurredAt ${e.occurredAtMs} is not newer than last applied ${last.occurredAtMs}`];
  }
  return compareHLC(last.hlc, e.hlc) < 0
    ? [true, 'hlc later than the last applied']
    : [false, 'hlc not later than the last applied: duplicate or stale'];
}

const ops = {
  hello({ protocol, version }) {
    if (protocol !== 'projector' || version !== 1) {
      throw new Refusal('bad_request', `this is an order projector, protocol version 1; asked for ${protocol} version ${version}`);
    }
    return { protocol: 'projector', version: 1 };
  },
  open({ projector }) {
    projectors.set(projector, new Map());
    return {};
  },
  apply({ projector, event }) {
    const orders = ordersOf(projector);
    const status = statusOf[event.kind];
    if (!status) throw new Refusal('bad_request', `unknown event kind ${JSON.stringify(event.kind)}`);
    const st = orders.get(event.orderId);
    let reason = 'first event of the order';
    if (st) {
      let ok;
      [ok, reason] = newer(event, st.last);
      if (!ok) return { applied: false, reason };
    }
    orders.set(event.orderId, { orderId: event.orderId, status, last: event });
    return { applied: true, reason };
  },
  state({ projector }) {
    return { orders: [...ordersOf(projector).values()] };
  },
  close({ projector }) {
    projectors.delete(projector);
    return {};
  },
};

function handle(line) {
  let req;
  try {
    req = JSON.parse(line);
  } catch (err) {
    return { id: null, error: `request is not JSON: ${err.message}`, kind: 'bad_request' };
  }
  const op = Object.hasOwn(ops, req.op) ? ops[req.op] : null;
  if (!op) return { id: req.id, error: `unknown op ${JSON.stringify(req.op)}`, kind: 'bad_request' };
  try {
    return { id: req.id, ok: true, ...op(req) };
  } catch (err) {
    if (err instanceof Refusal) return { id: req.id, error: err.message, kind: err.kind };
    throw err; // a bug: die loudly, the harness reports it with this stderr
  }
}

const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on('line', (line) => {
  if (line.trim() === '') return;
  process.stdout.write(JSON.stringify(handle(line)) + '\n');
});
// When stdin closes, let the process end once stdout is flushed
// (process.exit here could cut a long answer short).
rl.on('close', () => { process.exitCode = 0; });
