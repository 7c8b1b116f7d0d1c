#!/usr/bin/env node
// A claim store (inbox) with a unit of work and a ledger, in Node.js with no
// dependencies, speaking the idemcheck process-adapter protocol
// (impl/procstore/PROTOCOL.md): one JSON request per line on stdin, one JSON
// answer per line on stdout.
//
// Durable state lives in the file named by IDEMCHECK_STATE_FILE and is
// replaced atomically (write a temporary file, then rename) after every
// change, so a kill at any instant leaves either the old or the new state.
// Units of work live in memory only and die with the process, like a
// database transaction dies with its connection.
//
// Time is never read from a clock: every request carries the store's time
// in nowMs, which keeps the harness's runs reproducible.
'use strict';

const fs = require('fs');
const readline = require('readline');

const stateFile = process.env.IDEMCHECK_STATE_FILE;
if (!stateFile) {
  process.stderr.write('inbox.js: IDEMCHECK_STATE_FILE is not set\n');
  process.exit(2);
}

// state is everything durable: claim records by key, ledger entries by
// (consumer, eventId), and the last fencing token issued by this store.
let state = load();
// Open units of work: id -> {key, token, staged}. Not durable on purpose.
const units = new Map();
let nextUnit = 0;

function emptyState() {
  return { lastToken: 0, records: {}, ledger: {} };
}

function load() {
  try {
    return JSON.parse(fs.readFileSync(stateFile, 'utf8'));
  } catch (err) {
    if (err.code === 'ENOENT') return emptyState();
    throw err; // a corrupt state file must not be silently replaced
  }
}

function save() {
  const tmp = stateFile + '.tmp';
  fs.writeFileSync(tmp, JSON.stringify(state));
  fs.renameSync(tmp, stateFile);
}

// A key's identity is the whole (tenant, consumer, id) tuple; JSON keeps
// the parts apart whatever characters they hold.
const recordKey = (k) => JSON.stringify([k.tenant, k.consumer, k.id]);
const ledgerKey = (e) => JSON.stringify([e.consumer, e.eventId]);

class Refusal extends Error {
  constructor(kind, message) {
    super(message);
    this.kind = kind;
  }
}

function keyName(k) {
  return `${k.tenant}/${k.consumer}/${k.id}`;
}

// checkHeld is the fencing check: the record must be processing under
// exactly this token.
function checkHeld(key, token) {
  const r = state.records[recordKey(key)];
  if (!r || r.state !== 'processing') {
    throw new Refusal('not_held', `claim not held: ${keyName(key)}`);
  }
  if (r.token !== token) {
    throw new Refusal('stale', `stale fencing token: ${keyName(key)} holds token ${r.token}, caller has ${token}`);
  }
  return r;
}

function unit(id) {
  const u = units.get(id);
  if (!u) throw new Refusal('unknown_tx', `no open unit of work ${id}`);
  return u;
}

const ops = {
  claim({ nowMs, key, leaseMs }) {
    const k = recordKey(key);
    const r = state.records[k];
    if (r && r.state === 'processed') return { claim: { outcome: 'processed', atMs: nowMs } };
    if (r && r.state === 'processing' && nowMs < r.leaseUntilMs) return { claim: { outcome: 'locked', atMs: nowMs } };
    const takeover = Boolean(r && r.state === 'processing');
    const next = {
      key,
      state: 'processing',
      startedAtMs: nowMs,
      attempts: (r ? r.attempts : 0) + 1,
      token: ++state.lastToken,
      leaseUntilMs: nowMs + leaseMs,
    };
    if (r && r.lastError) next.lastError = r.lastError;
    state.records[k] = next;
    save();
    return { claim: { outcome: 'acquired', token: next.token, attempt: next.attempts, takeover, atMs: nowMs } };
  },

  // begin opens a unit of work; the token is checked by commit, because a
  // lease may be taken over while the unit is open.
  begin({ key, token }) {
    const id = ++nextUnit;
    units.set(id, { key, token, staged: [] });
    return { tx: id };
  },

  credit({ tx, entry }) {
    unit(tx).staged.push(entry);
    return {};
  },

  // commit checks the token, then lands the staged entries and the
  // processed mark in one save: together or not at all.
  commit({ nowMs, tx }) {
    const u = unit(tx);
    units.delete(tx);
    const r = checkHeld(u.key, u.token);
    let credited = 0;
    let duplicatesIgnored = 0;
    for (const e of u.staged) {
      const lk = ledgerKey(e);
      if (lk in state.ledger) {
        duplicatesIgnored++; // the unique constraint: never a second credit
      } else {
        state.ledger[lk] = e;
        credited++;
      }
    }
    r.state = 'processed';
    r.finishedAtMs = nowMs;
    r.leaseUntilMs = 0;
    delete r.lastError;
    save();
    return { commit: { credited, duplicatesIgnored, atMs: nowMs } };
  },

  rollback({ tx }) {
    units.delete(tx);
    return {};
  },

  fail({ key, token, reason }) {
    const r = checkHeld(key, token);
    r.state = 'failed';
    r.lastError = reason;
    r.leaseUntilMs = 0;
    save();
    return {};
  },

  get({ key }) {
    const r = state.records[recordKey(key)];
    return r ? { found: true, record: r } : { found: false };
  },

  // cleanup decides by the store's time (the request's), never a worker's.
  cleanup({ nowMs, retentionMs }) {
    const cutoff = nowMs - retentionMs;
    const keys = [];
    for (const [k, r] of Object.entries(state.records)) {
      if (r.state === 'processed' && r.finishedAtMs <= cutoff) {
        keys.push(r.key);
        delete state.records[k];
      }
    }
    if (keys.length > 0) save();
    return { keys };
  },

  records() {
    return { records: Object.values(state.records) };
  },

  ledger() {
    return { entries: Object.values(state.ledger) };
  },

  now({ nowMs }) {
    return { nowMs };
  },

  reset() {
    state = emptyState();
    units.clear();
    save();
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
    throw err; // a bug or an I/O failure: die loudly, the harness reports it
  }
}

const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on('line', (line) => {
  if (line.trim() === '') return;
  process.stdout.write(JSON.stringify(handle(line)) + '\n');
});
rl.on('close', () => process.exit(0));
