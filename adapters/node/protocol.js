'use strict';
// The lockbench adapter protocol, version 1, shared by the Node adapters:
// reads requests from stdin, runs them concurrently by id, writes one answer
// per request (cancel has none), sends `lost` events, and exits on stdin EOF.
// An adapter supplies the hello and an object with
//   acquire(req, ctx) -> Promise<{handle, token?, waited?, valid_ms?}> or null (not acquired)
//   release(handle) -> Promise, extend(handle, ttl_ms) -> Promise<{valid_ms?}>
//   classify(err) -> error class, close() -> Promise
//   ready (optional) -> Promise resolved once its clients take commands:
//   requests wait for it
// ctx.cancelled tells an acquire that lockbench gave up on it, ctx.lost(handle)
// reports a held lock lost.

const readline = require('readline');

const SECRETS = [process.env.LOCKBENCH_REDIS_PASSWORD].filter((s) => s);

function redact(text) {
  let s = String(text);
  for (const secret of SECRETS) s = s.split(secret).join('***');
  return s;
}

function log(...args) {
  process.stderr.write(redact(args.join(' ')) + '\n');
}

function send(obj) {
  // Pipes are synchronous on Linux, so lines never interleave.
  process.stdout.write(JSON.stringify(obj) + '\n');
}

function envInt(name, dflt) {
  const v = parseInt(process.env[name] || '', 10);
  return Number.isFinite(v) && v > 0 ? v : dflt;
}

function errorAnswer(id, cls, err) {
  const a = { id, ok: false, error: cls };
  if (err) a.message = redact(err.message || err).slice(0, 300);
  return a;
}

function run(hello, makeAdapter) {
  if (process.argv.includes('--hello')) {
    send(hello);
    return;
  }
  send(hello);
  process.stdout.on('error', () => process.exit(0)); // lockbench went away
  // redis-semaphore refreshes from a timer and lets a failed call's rejection
  // go unhandled, which kills Node 20. Log it instead: the lock is not lost
  // until a refresh finds the key gone, and then onLockLost says so.
  process.on('unhandledRejection', (err) => log('unhandled rejection:', (err && err.message) || err));
  const adapter = makeAdapter();
  const pending = new Map(); // acquire id -> {cancelled}
  const held = new Map(); // acquire id -> {handle, key, token}

  const classify = (err) => {
    try { return adapter.classify(err) || 'error'; } catch (_) { return 'error'; }
  };

  async function acquire(req) {
    const state = { cancelled: false };
    pending.set(req.id, state);
    const ctx = {
      get cancelled() { return state.cancelled; },
      lost: (handle) => {
        for (const [lockId, h] of held) {
          if (h.handle === handle) send({ event: 'lost', lock: lockId, key: h.key, token: h.token || 0 });
        }
      },
    };
    let answer;
    let granted = null;
    try {
      granted = await adapter.acquire(req, ctx);
      if (granted) {
        answer = { id: req.id, ok: true, token: granted.token || 0, waited: !!granted.waited };
        if (granted.valid_ms !== undefined) answer.valid_ms = Math.max(0, Math.round(granted.valid_ms));
      } else {
        answer = { id: req.id, ok: false, error: 'not_acquired' };
      }
    } catch (err) {
      answer = errorAnswer(req.id, classify(err), err);
    }
    pending.delete(req.id);
    if (state.cancelled) {
      // Already answered `cancelled`; a lock granted after that is nobody's.
      if (granted) adapter.release(granted.handle).catch((e) => log('release after cancel:', e.message));
      return;
    }
    if (granted) held.set(req.id, { handle: granted.handle, key: req.key, token: granted.token });
    send(answer);
  }

  async function release(req) {
    const h = held.get(req.lock);
    if (!h) return send({ id: req.id, ok: false, error: 'not_owner', message: 'no such lock' });
    held.delete(req.lock);
    try {
      await adapter.release(h.handle);
      send({ id: req.id, ok: true });
    } catch (err) {
      send(errorAnswer(req.id, classify(err), err));
    }
  }

  async function extend(req) {
    const h = held.get(req.lock);
    if (!h) return send({ id: req.id, ok: false, error: 'not_owner', message: 'no such lock' });
    if (!adapter.extend) return send({ id: req.id, ok: false, error: 'error', message: 'extend not supported' });
    try {
      const r = (await adapter.extend(h.handle, req.ttl_ms)) || {};
      const a = { id: req.id, ok: true };
      if (r.valid_ms !== undefined) a.valid_ms = Math.max(0, Math.round(r.valid_ms));
      send(a);
    } catch (err) {
      send(errorAnswer(req.id, classify(err), err));
    }
  }

  function cancel(req) {
    const state = pending.get(req.target);
    if (!state || state.cancelled) return;
    state.cancelled = true;
    send({ id: req.target, ok: false, error: 'cancelled' });
    if (adapter.cancel) adapter.cancel(req.target);
  }

  function dispatch(req) {
    switch (req.op) {
      case 'acquire': return void acquire(req);
      case 'release': return void release(req);
      case 'extend': return void extend(req);
      case 'cancel': return cancel(req);
      default:
        if (req.id !== undefined) send({ id: req.id, ok: false, error: 'error', message: 'unknown op ' + req.op });
    }
  }

  // Requests that came before the adapter was ready, in order; null once it is.
  let early = adapter.ready ? [] : null;
  if (early) {
    Promise.resolve(adapter.ready)
      .catch((err) => log('not ready:', (err && err.message) || err))
      .then(() => {
        const q = early;
        early = null;
        q.forEach(dispatch);
      });
  }

  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  rl.on('line', (line) => {
    if (!line.trim()) return;
    let req;
    try {
      req = JSON.parse(line);
    } catch (_) {
      return log('not JSON, ignored:', line.slice(0, 200));
    }
    if (early) early.push(req);
    else dispatch(req);
  });
  rl.on('close', () => {
    // Held locks are left to expire: lockbench closes stdin at the end of a run.
    const bye = () => process.exit(0);
    setTimeout(bye, 1000).unref();
    Promise.resolve().then(() => adapter.close && adapter.close()).then(bye, bye);
  });
}

module.exports = { run, send, log, redact, envInt };
