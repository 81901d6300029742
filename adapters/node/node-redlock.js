#!/usr/bin/env node
'use strict';
// node-redlock: npm redlock 4.2.0 over five Redis masters through ioredis 5,
// run as its users run it: lock(resource, ttl) and the library's own retry loop.
const Redlock = require('redlock');
const { run, log } = require('./protocol');
const redis = require('./redis');

const hello = {
  hello: 'lockbench-adapter', protocol: 1, name: 'node-redlock',
  library: 'redlock', library_version: '4.2.0', backend: 'redis', nodes: 5, lease: 'ttl',
  capabilities: { token: false, extend: true, blocking: true },
};

run(hello, () => {
  // A down master must fail an attempt at once (redlock waits for every
  // master's reply on each of its attempts): without the offline queue a
  // command to a disconnected client is refused instead of held until
  // ioredis reconnects.
  const clients = redis.addrs().map((a) => redis.client(a, { enableOfflineQueue: false }));
  const quorum = Math.floor(clients.length / 2) + 1;
  const redlock = new Redlock(clients, { driftFactor: 0.01, retryCount: 10, retryDelay: 200, retryJitter: 100 });
  let last = 0;
  redlock.on('clientError', (err) => {
    if (Date.now() - last > 5000) {
      last = Date.now();
      log('redlock clientError:', err.message);
    }
  });
  log(`node-redlock: ${clients.length} masters, connect/command timeout ${redis.CALL_TIMEOUT_MS} ms`);

  return {
    // Without the offline queue a command sent before a client has connected
    // fails at once: the first request waits for a quorum of them, up to one
    // connect timeout.
    ready: redis.whenReady(clients, quorum, redis.CALL_TIMEOUT_MS),
    // redlock 4.2.0 cannot be stopped mid-loop: its retries are bounded by
    // retryCount, not by timeout_ms. lockbench cancels an acquire that outlives
    // its deadline, and the protocol loop releases a lock granted after that.
    acquire: async (req) => {
      const lock = await redlock.lock(req.key, req.ttl_ms);
      // The lock comes back with whatever validity its retries left.
      return { handle: lock, waited: lock.attempts > 1, valid_ms: lock.expiration - Date.now() };
    },
    release: (lock) => lock.unlock(),
    extend: async (lock, ttl) => {
      await lock.extend(ttl);
      return { valid_ms: lock.expiration - Date.now() };
    },
    classify: (err) => {
      if (err instanceof Redlock.LockError) {
        // redlock only says "no quorum": it is the servers' fault when a
        // quorum of them is not even connected, the holder's otherwise.
        const up = clients.filter((c) => c.status === 'ready').length;
        if (up < quorum) return 'unavailable';
        return /attempts to lock/.test(err.message) ? 'not_acquired' : 'not_owner';
      }
      return redis.classify(err) || 'error';
    },
    close: () => Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect()))),
  };
});
