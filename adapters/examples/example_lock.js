#!/usr/bin/env node
'use strict';
// A complete lockbench adapter (protocol 1): Redis SET NX PX with a random
// value, released by compare-and-delete. Copy it and put your own lock in
// acquire() and release(). Needs ioredis: here the copy pinned in
// adapters/node (run `npm ci` there); in your project, `npm install ioredis`.
const crypto = require('crypto');
const fs = require('fs');
const path = require('path');
const readline = require('readline');
module.paths.push(path.join(__dirname, '..', 'node', 'node_modules'));
const Redis = require('ioredis');

const hello = {
  hello: 'lockbench-adapter', protocol: 1, name: 'example-js', library: 'ioredis',
  library_version: require('ioredis/package.json').version, backend: 'redis', nodes: 1,
  lease: 'ttl', capabilities: { token: false, extend: false, blocking: false },
};
// Deletes the key only if it still holds our value: never someone else's lock.
const RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0";
const send = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');
const held = new Map(); // lock id -> {key, value}
const pending = new Map(); // acquire id -> cancelled?

function client() {
  const addr = process.env.LOCKBENCH_REDIS_ADDRS.split(',')[0];
  const i = addr.lastIndexOf(':');
  const ca = process.env.LOCKBENCH_REDIS_CACERT;
  return new Redis({
    host: addr.slice(0, i), port: Number(addr.slice(i + 1)),
    password: process.env.LOCKBENCH_REDIS_PASSWORD || undefined,
    tls: ca ? { ca: fs.readFileSync(ca) } : undefined,
    connectTimeout: 2000, commandTimeout: 2000, maxRetriesPerRequest: 1,
  }).on('error', () => {}); // each failed call answers its own error
}

function fail(id, err) {
  const cls = /timed out/.test(err.message) ? 'timeout' : 'unavailable';
  send({ id, ok: false, error: cls, message: err.name }); // no message: it could carry a secret
}

async function acquire(r, req) {
  const value = crypto.randomBytes(16).toString('hex');
  let got = null, err = null;
  try { // one attempt: timeout_ms is 0, lockbench retries
    got = await r.set(req.key, value, 'PX', req.ttl_ms, 'NX');
  } catch (e) { err = e; }
  const cancelled = pending.get(req.id);
  pending.delete(req.id);
  if (cancelled) { // answered already: let go of a lock nobody waits for
    if (got) r.eval(RELEASE, 1, req.key, value).catch(() => {});
    return;
  }
  if (err) return fail(req.id, err);
  if (got) held.set(req.id, { key: req.key, value });
  send(got ? { id: req.id, ok: true, waited: false } : { id: req.id, ok: false, error: 'not_acquired' });
}

async function release(r, req) {
  const lock = held.get(req.lock);
  held.delete(req.lock);
  try {
    const ok = lock && (await r.eval(RELEASE, 1, lock.key, lock.value)) === 1;
    send(ok ? { id: req.id, ok: true } : { id: req.id, ok: false, error: 'not_owner' });
  } catch (e) { fail(req.id, e); }
}

send(hello);
if (!process.argv.includes('--hello')) {
  const r = client();
  readline.createInterface({ input: process.stdin }).on('line', (line) => {
    const req = JSON.parse(line);
    if (req.op === 'acquire') { pending.set(req.id, false); acquire(r, req); }
    else if (req.op === 'release') release(r, req);
    else if (req.op === 'cancel' && pending.get(req.target) === false) {
      pending.set(req.target, true);
      send({ id: req.target, ok: false, error: 'cancelled' });
    } else if (req.op !== 'cancel') send({ id: req.id, ok: false, error: 'error', message: 'unsupported' });
  }).on('close', () => process.exit(0));
}
