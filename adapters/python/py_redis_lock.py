#!/usr/bin/python3
"""py-redis-lock: redis-py's Lock (Debian's python3-redis 4.3.4).

timeout = the TTL, blocking_timeout = the acquire timeout, sleep 0.1 s;
everything else at redis-py's defaults, except the client's socket timeouts
(below). The Lock keeps its token thread-local, so the protocol loop runs a
lock's acquire, extend and release on one thread.
"""

import os

import redis
import redis.exceptions as rx
from redis.lock import Lock

import lockbench_protocol as proto

HELLO = {
    "hello": "lockbench-adapter", "protocol": 1, "name": "py-redis-lock",
    "library": "redis-py", "library_version": "4.3.4", "backend": "redis", "nodes": 1, "lease": "ttl",
    "capabilities": {"token": False, "extend": True, "blocking": True},
}

TTL_MS = proto.env_int("LOCKBENCH_ADAPTER_TTL_MS", 1000)
ACQUIRE_TIMEOUT_MS = proto.env_int("LOCKBENCH_ADAPTER_ACQUIRE_TIMEOUT_MS", 5000)
# As in the Node adapters: a call to a down or stalled server fails within the
# acquire timeout instead of hanging a worker's thread (redis-py's default is
# no timeout at all).
CALL_TIMEOUT_S = max(0.05, min(TTL_MS, ACQUIRE_TIMEOUT_MS) / 2 / 1000.0)


class CountingLock(Lock):
    """redis-py's Lock, counting its attempts to tell whether it waited."""

    attempts = 0

    def do_acquire(self, token):
        self.attempts += 1
        return super().do_acquire(token)


class RedisLock:
    def __init__(self):
        host, _, port = os.environ["LOCKBENCH_REDIS_ADDRS"].split(",")[0].strip().rpartition(":")
        kw = dict(host=host, port=int(port), socket_timeout=CALL_TIMEOUT_S,
                  socket_connect_timeout=CALL_TIMEOUT_S)
        if os.environ.get("LOCKBENCH_REDIS_PASSWORD"):
            kw["password"] = os.environ["LOCKBENCH_REDIS_PASSWORD"]
        if os.environ.get("LOCKBENCH_REDIS_CACERT"):
            kw.update(ssl=True, ssl_ca_certs=os.environ["LOCKBENCH_REDIS_CACERT"])
        self.client = redis.Redis(**kw)

    def acquire(self, req, ctx):
        lock = CountingLock(self.client, req["key"], timeout=req["ttl_ms"] / 1000.0, sleep=0.1)
        # In 4.3.4 acquire's first positional parameter is sleep: keywords only.
        if not lock.acquire(blocking=True, blocking_timeout=req["timeout_ms"] / 1000.0):
            return None
        return {"handle": lock, "waited": lock.attempts > 1}

    def release(self, lock):
        lock.release()

    def extend(self, lock, ttl_ms):
        lock.extend(additional_time=ttl_ms / 1000.0, replace_ttl=True)

    def classify(self, exc):
        if isinstance(exc, rx.TimeoutError):
            return "timeout"
        if isinstance(exc, rx.AuthenticationError):
            return "error"
        if isinstance(exc, rx.ConnectionError):
            return "unavailable"
        if isinstance(exc, (rx.LockNotOwnedError, rx.LockError)):
            return "not_owner"
        return "error"

    def close(self):
        self.client.close()


if __name__ == "__main__":
    proto.run(HELLO, RedisLock)
