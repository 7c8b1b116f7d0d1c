#!/usr/bin/env node
// A hybrid logical clock in Node.js with no dependencies, speaking the
// idemcheck "hlc" protocol, version 1 (impl/adapter/procparts/PROTOCOL.md):
// one JSON request per line on stdin, one JSON answer per line on stdout.
//
// One process holds every node's clock, each under the handle the harness
// gave it in "open". A clock never reads a clock of its own: every request
// carries the node's physical time in physMs, so the harness's skew and
// clock steps reach it and runs are reproducible.
//
// Environment:
//   HLC_MAX_OFFSET_MS  a max-offset guard, as CockroachDB's clock has: a
//                      merge refuses a remote stamp whose wall is more than
//                      this far ahead of the physical clock (0 or unset:
//                      never refuses)
//   HLC_BUG            a deliberate bug, to see the harness catch it:
//                        drop-counter    tick keeps the wall but never counts,
//                                        so two events in one millisecond
//                                        get the same stamp
//                        refuse-delayed  the guard measures the distance
//                                        either way, so it refuses a stamp
//                                        merely delayed in a queue
'use strict';

const readline = require('readline');

const maxOffsetMs = Number(process.env.HLC_MAX_OFFSET_MS || 0);
const bug = process.env.HLC_BUG || '';
if (!Number.isInteger(maxOffsetMs) || maxOffsetMs < 0) {
  process.stderr.write(`hlc.js: HLC_MAX_OFFSET_MS=${process.env.HLC_MAX_OFFSET_MS}: want a whole number of milliseconds, 0 or more\n`);
  process.exit(2);
}
if (!['', 'drop-counter', 'refuse-delayed'].includes(bug)) {
  process.stderr.write(`hlc.js: HLC_BUG=${bug}: want drop-counter or refuse-delayed\n`);
  process.exit(2);
}

// clocks: handle -> {node, wallMs, logical}; the last stamp each returned.
const clocks = new Map();

class Refusal extends Error {
  constructor(kind, message) {
    super(message);
    this.kind = kind;
  }
}

function clockOf(handle) {
  const c = clocks.get(handle);
  if (!c) throw new Refusal('bad_request', `no open clock ${handle}`);
  return c;
}

const stamp = (c) => ({ wallMs: c.wallMs, logical: c.logical, node: c.node });

// tick: a local or send event. The wall is the greatest physical time seen;
// the counter orders events that share it.
function tick(c, physMs) {
  if (physMs > c.wallMs) {
    c.wallMs = physMs;
    c.logical = 0;
  } else if (bug !== 'drop-counter') {
    c.logical += 1;
  }
  return stamp(c);
}

// merge: the receipt of a remote stamp, later than it and than every stamp
// this clock returned.
function merge(c, physMs, remote) {
  const ahead = remote.wallMs - physMs;
  const distance = bug === 'refuse-delayed' ? Math.abs(ahead) : ahead;
  if (maxOffsetMs > 0 && distance > maxOffsetMs) {
    throw new Refusal('refused', `remote wall ${remote.wallMs} is ${ahead} ms from the physical clock ${physMs}, beyond the max offset ${maxOffsetMs} ms`);
  }
  const wall = Math.max(c.wallMs, remote.wallMs, physMs);
  let logical = 0;
  if (wall === c.wallMs && wall === remote.wallMs) logical = Math.max(c.logical, remote.logical) + 1;
  else if (wall === c.wallMs) logical = c.logical + 1;
  else if (wall === remote.wallMs) logical = remote.logical + 1;
  c.wallMs = wall;
  c.logical = logical;
  return stamp(c);
}

const ops = {
  hello({ protocol, version }) {
    if (protocol !== 'hlc' || version !== 1) {
      throw new Refusal('bad_request', `this is an hlc clock, protocol version 1; asked for ${protocol} version ${version}`);
    }
    return { protocol: 'hlc', version: 1 };
  },
  open({ clock, node }) {
    clocks.set(clock, { node, wallMs: 0, logical: 0 });
    return { maxOffsetMs };
  },
  tick({ clock, physMs }) {
    return { stamp: tick(clockOf(clock), physMs) };
  },
  burst({ clock, physMs, count }) {
    const c = clockOf(clock);
    const stamps = new Array(count);
    for (let i = 0; i < count; i++) stamps[i] = tick(c, physMs);
    return { stamps };
  },
  merge({ clock, physMs, remote }) {
    return { stamp: merge(clockOf(clock), physMs, remote) };
  },
  close({ clock }) {
    clocks.delete(clock);
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
