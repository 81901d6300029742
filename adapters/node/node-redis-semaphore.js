#!/usr/bin/env node
'use strict';
// node-redis-semaphore: redis-semaphore 5.8.0's Mutex over ioredis, whose
// lease a timer refreshes while the holder runs.
const { Mutex } = require('redis-semaphore');
const { run, log } = require('./protocol');
const redis = require('./redis');

const hello = {
  hello: 'lockbench-adapter', protocol: 1, name: 'node-redis-semaphore',
  library: 'redis-semaphore', library_version: '5.8.0', backend: 'redis', nodes: 1, lease: 'renewed',
  capabilities: { token: false, extend: false, blocking: true },
};

run(hello, () => {
  const client = redis.client(redis.addrs()[0]);
  const aborts = new Map(); // acquire id -> AbortController

  return {
    acquire: async (req, ctx) => {
      // Counts this acquire's SET NX attempts, to tell whether it waited.
      let attempts = 0;
      const counted = new Proxy(client, {
        get(target, prop) {
          if (prop === 'set') return (...args) => { attempts += 1; return target.set(...args); };
          const v = target[prop];
          return typeof v === 'function' ? v.bind(target) : v;
        },
      });
      const mutex = new Mutex(counted, req.key, {
        lockTimeout: req.ttl_ms,
        // With 0 its loop makes no attempt at all; 1 ms makes the one the protocol means.
        acquireTimeout: Math.max(1, req.timeout_ms),
        retryInterval: 10,
        refreshInterval: Math.round(0.8 * req.ttl_ms),
        // The default throws from a timer and kills the process.
        onLockLost: () => ctx.lost(mutex),
      });
      const abort = new AbortController();
      aborts.set(req.id, abort);
      try {
        const ok = await mutex.tryAcquire(abort.signal);
        return ok ? { handle: mutex, waited: attempts > 1 } : null;
      } catch (err) {
        if (abort.signal.aborted) return null; // already answered `cancelled`
        throw err;
      } finally {
        aborts.delete(req.id);
      }
    },
    cancel: (id) => {
      const abort = aborts.get(id);
      if (abort) abort.abort();
    },
    release: async (mutex) => {
      // The Mutex's release() says nothing when the key is no longer ours;
      // once its refresh has found the lock lost, it knows.
      if (!mutex.isAcquired) {
        const err = new Error('lock lost before release');
        err.lockbenchClass = 'not_owner';
        throw err;
      }
      await mutex.release();
    },
    classify: (err) => err.lockbenchClass || redis.classify(err) || 'error',
    close: () => client.quit().catch(() => client.disconnect()),
  };
});
