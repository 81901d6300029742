'use strict';
// ioredis clients built from lockbench's environment, shared by the Redis adapters.
const fs = require('fs');
const Redis = require('ioredis');
const { log, envInt } = require('./protocol');

const TTL_MS = envInt('LOCKBENCH_ADAPTER_TTL_MS', 1000);
const ACQUIRE_TIMEOUT_MS = envInt('LOCKBENCH_ADAPTER_ACQUIRE_TIMEOUT_MS', 5000);

// A reply slower than the TTL cannot yield a valid lock, and a call to a down
// server must fail within the acquire timeout, with room for another attempt:
// so connect and command timeouts are half the smaller of the two.
const CALL_TIMEOUT_MS = Math.max(50, Math.floor(Math.min(TTL_MS, ACQUIRE_TIMEOUT_MS) / 2));

function addrs() {
  const list = (process.env.LOCKBENCH_REDIS_ADDRS || '').split(',').map((s) => s.trim()).filter((s) => s);
  if (list.length === 0) throw new Error('LOCKBENCH_REDIS_ADDRS is not set');
  return list;
}

function client(addr, extra) {
  const i = addr.lastIndexOf(':');
  const opts = {
    host: addr.slice(0, i),
    port: parseInt(addr.slice(i + 1), 10),
    connectTimeout: CALL_TIMEOUT_MS,
    commandTimeout: CALL_TIMEOUT_MS,
    // ioredis's default (20) keeps a command queued across 20 reconnects
    // (about 10 s) while a server is down; 1 fails it at the next failed reconnect.
    maxRetriesPerRequest: 1,
  };
  Object.assign(opts, extra);
  if (process.env.LOCKBENCH_REDIS_PASSWORD) opts.password = process.env.LOCKBENCH_REDIS_PASSWORD;
  if (process.env.LOCKBENCH_REDIS_CACERT) opts.tls = { ca: fs.readFileSync(process.env.LOCKBENCH_REDIS_CACERT) };
  const c = new Redis(opts);
  // Without a listener ioredis prints every reconnect failure; once per 5 s is enough.
  let last = 0;
  c.on('error', (err) => {
    if (Date.now() - last > 5000) {
      last = Date.now();
      log(`redis ${addr}: ${err.message}`);
    }
  });
  return c;
}

// whenReady resolves once `need` of the clients are connected and take
// commands, or after ms: a client not connected by then is down, and
// waiting longer would gain nothing.
function whenReady(clients, need, ms) {
  return new Promise((resolve) => {
    let ready = clients.filter((c) => c.status === 'ready').length;
    if (ready >= need) return resolve();
    const timer = setTimeout(resolve, ms);
    const one = () => {
      ready += 1;
      if (ready >= need) {
        clearTimeout(timer);
        resolve();
      }
    };
    clients.filter((c) => c.status !== 'ready').forEach((c) => c.once('ready', one));
  });
}

function classify(err) {
  if (!err) return 'error';
  if (/timed out/i.test(err.message || '')) return 'timeout';
  if (err.name === 'MaxRetriesPerRequestError') return 'unavailable';
  if (['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND'].includes(err.code)) return 'unavailable';
  if (/Connection is closed|Stream isn't writeable|connect/i.test(err.message || '')) return 'unavailable';
  return null;
}

module.exports = { addrs, client, whenReady, classify, CALL_TIMEOUT_MS, TTL_MS, ACQUIRE_TIMEOUT_MS };
