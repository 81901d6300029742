#!/usr/bin/python3
"""py-kazoo: kazoo's Lock (Debian's python3-kazoo 2.8) on ZooKeeper.

The lease is the ZooKeeper session: one KazooClient per process, whose
timeout (the session timeout kazoo asks for) is the scenario's TTL in
seconds, LOCKBENCH_ADAPTER_TTL_MS / 1000 as a float. The server clamps it to
[2, 20] x its tickTime (4 s to 40 s with ZooKeeper's default tickTime of 2 s).
Everything else but the reconnect backoff stays at kazoo's defaults. kazoo
queues a call made while it is disconnected until it reconnects, whatever
the Lock's timeout; the protocol's loop answers such an acquire unavailable
just past its timeout.
"""

import os
import threading

from kazoo.client import KazooClient, KazooState
import kazoo.exceptions as kx
from kazoo.handlers.threading import KazooTimeoutError

import lockbench_protocol as proto

HELLO = {
    "hello": "lockbench-adapter", "protocol": 1, "name": "py-kazoo",
    "library": "kazoo", "library_version": "2.8", "backend": "zookeeper", "nodes": 1, "lease": "session",
    "capabilities": {"token": True, "extend": False, "blocking": True},
}

ROOT = "/lockbench/kazoo"


class Unavailable(Exception):
    pass


class NotOwner(Exception):
    pass


class KazooLock:
    def __init__(self):
        ttl_s = proto.env_int("LOCKBENCH_ADAPTER_TTL_MS", 10000) / 1000.0
        # kazoo's reconnect backoff doubles up to an hour by default, so a
        # client could wait minutes to use a restarted server; capped at 1s.
        self.client = KazooClient(hosts=os.environ["LOCKBENCH_ZK_SERVERS"], timeout=ttl_s,
                                  connection_retry=dict(max_tries=-1, max_delay=1.0))
        self.mu = threading.Lock()
        self.holding = {}  # kazoo Lock -> the protocol's ctx, while held
        self.connected = threading.Event()
        self.client.add_listener(self.on_state)
        # Not waiting here: an ensemble that is down makes acquires answer
        # unavailable, not the adapter fail to start.
        self.client.start_async()

    def on_state(self, state):
        if state == KazooState.CONNECTED:
            self.connected.set()
        else:
            self.connected.clear()
        # Only LOST (the session expired: the server has deleted our
        # ephemeral znodes) says the lock is gone. SUSPENDED only says the
        # connection dropped; the session, and the lock, may well survive it,
        # and kazoo reconnects within it. This runs on kazoo's event thread and must not block.
        if state == KazooState.LOST:
            with self.mu:
                lost = list(self.holding.items())
            for lock, ctx in lost:
                lock.lost = True
                proto.log("session lost while holding", ctx.req["key"], "token", lock.token)
                ctx.lost()

    def acquire(self, req, ctx):
        # kazoo queues a request made while disconnected until it reconnects,
        # whatever the Lock's timeout: so wait for the connection here, bounded
        # by the acquire's timeout, and answer unavailable without one.
        if not self.connected.wait(max(0.0, req["timeout_ms"] / 1000.0)):
            raise Unavailable("not connected to ZooKeeper")
        lock = self.client.Lock(ROOT + "/" + req["key"].replace("/", "%2F"))
        lock.lost = False
        # kazoo does not say whether we waited: count how often it looked for
        # a predecessor (once when there was none, again after each wait).
        lock.looks = 0
        look = lock._get_predecessor

        def counted(node):
            lock.looks += 1
            return look(node)

        lock._get_predecessor = counted
        ctx.data["lock"] = lock
        if ctx.cancelled:  # cancel() came before this thread had a lock to cancel
            return None
        try:
            got = lock.acquire(blocking=True, timeout=req["timeout_ms"] / 1000.0)
        except kx.LockTimeout:
            got = False
        except kx.CancelledError:
            return None  # already answered `cancelled`
        if not got:
            if not self.client.connected:
                raise Unavailable("not connected to ZooKeeper")
            return None
        # Lock.node is "<uuid>__lock__0000000042": its sequence number grows
        # with each contender for the path, so it serves as a fencing token,
        # plus one (the protocol's tokens are >= 1; the first is 0).
        lock.token = int(lock.node[-10:]) + 1
        with self.mu:
            self.holding[lock] = ctx
        return {"handle": lock, "token": lock.token, "waited": lock.looks > 1}

    def overdue(self, ctx):
        # lock.acquire is stuck in a call kazoo queued while disconnected.
        return "timeout" if self.client.connected else "unavailable"

    def cancel(self, ctx):
        lock = ctx.data.get("lock")
        if lock is not None:
            lock.cancel()

    def release(self, lock):
        with self.mu:
            self.holding.pop(lock, None)
        if lock.lost:
            lock.release()  # lets kazoo forget it; the znode is gone already
            raise NotOwner("the session holding the lock expired")
        lock.release()

    def classify(self, exc):
        if isinstance(exc, NotOwner):
            return "not_owner"
        if isinstance(exc, (Unavailable, kx.ConnectionLoss, kx.ConnectionClosedError, kx.SessionExpiredError)):
            return "unavailable"
        if isinstance(exc, (kx.OperationTimeoutError, KazooTimeoutError)):
            return "timeout"
        return "error"

    def close(self):
        self.client.stop()
        self.client.close()


if __name__ == "__main__":
    proto.run(HELLO, KazooLock)
