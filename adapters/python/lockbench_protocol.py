"""The lockbench adapter protocol, version 1, shared by the Python adapters.

Mirrors adapters/node/protocol.js, with threads: the main thread reads
requests; each acquire gets its own thread, which, once the lock is granted,
also serves that lock's release and extend. Libraries such as redis-py keep
a lock's token thread-local, so one lock must stay on one thread.

An adapter is an object with
  acquire(req, ctx) -> dict(handle=..., token=..., waited=..., valid_ms=...) or None
  release(handle), extend(handle, ttl_ms) -> dict(valid_ms=...) or None
  classify(exc) -> error class, close(), and optionally cancel(handle_or_ctx)
  and overdue(ctx) -> the error class of an acquire past its timeout
ctx.cancelled tells an acquire lockbench gave up on it; ctx.lost() reports
the lock it got as lost.

A blocking acquire still running OVERDUE seconds past its timeout_ms is
answered by the loop, as if cancelled, with overdue(ctx) ("timeout" without
one): a library whose calls block while its server is down (kazoo queues them
until it reconnects) still answers in time. A lock granted later is released.
"""

import json
import os
import queue
import sys
import threading

SECRETS = [s for s in (os.environ.get("LOCKBENCH_REDIS_PASSWORD"),) if s]

_out = threading.Lock()

OVERDUE = 0.5


def redact(text):
    s = str(text)
    for secret in SECRETS:
        s = s.replace(secret, "***")
    return s


def log(*args):
    try:
        sys.stderr.write(redact(" ".join(str(a) for a in args)) + "\n")
        sys.stderr.flush()
    except Exception:
        pass


def send(obj):
    line = json.dumps(obj, separators=(",", ":")) + "\n"
    with _out:
        try:
            sys.stdout.write(line)
            sys.stdout.flush()
        except (BrokenPipeError, ValueError):
            os._exit(0)  # lockbench went away


def env_int(name, default):
    try:
        v = int(os.environ.get(name, ""))
        return v if v > 0 else default
    except ValueError:
        return default


def describe(exc):
    # Only the class and message, redacted: never a traceback, whose frames
    # could show a password.
    return redact("%s: %s" % (type(exc).__name__, exc))[:300]


class Ctx:
    def __init__(self, loop, req):
        self.req = req
        self.cancelled = False
        self.answered = False
        self.granted = None
        self.ops = queue.Queue()  # release/extend requests for the granted lock
        self._loop = loop
        self.data = {}  # the adapter's own per-acquire state
        self.answered_release = False  # no lost event once release has begun

    def lost(self):
        g = self.granted
        if g is not None and not self.answered_release:
            send({"event": "lost", "lock": self.req["id"], "key": self.req["key"],
                  "token": g.get("token") or 0})


class Loop:
    def __init__(self, adapter):
        self.adapter = adapter
        self.mu = threading.Lock()
        self.pending = {}  # acquire id -> Ctx, until answered
        self.held = {}  # acquire id -> Ctx, while granted

    def classify(self, exc):
        try:
            return self.adapter.classify(exc) or "error"
        except Exception:
            return "error"

    def error(self, rid, exc):
        send({"id": rid, "ok": False, "error": self.classify(exc), "message": describe(exc)})

    def run_lock(self, ctx):
        req = ctx.req
        rid = req["id"]
        try:
            granted = self.adapter.acquire(req, ctx)
            answer = None
        except Exception as exc:
            granted = None
            answer = {"id": rid, "ok": False, "error": self.classify(exc), "message": describe(exc)}
        timer = ctx.data.get("overdue")
        if timer is not None:
            timer.cancel()
        with self.mu:
            self.pending.pop(rid, None)
            cancelled = ctx.cancelled
            if granted is not None and not cancelled:
                ctx.granted = granted
                self.held[rid] = ctx
            ctx.answered = True
        if cancelled:
            # Already answered `cancelled`; a lock granted after that is nobody's.
            if granted is not None:
                try:
                    self.adapter.release(granted["handle"])
                except Exception as exc:
                    log("release after cancel:", describe(exc))
            return
        if answer is None:
            if granted is None:
                answer = {"id": rid, "ok": False, "error": "not_acquired"}
            else:
                answer = {"id": rid, "ok": True, "token": granted.get("token") or 0,
                          "waited": bool(granted.get("waited"))}
                if granted.get("valid_ms") is not None:
                    answer["valid_ms"] = max(0, int(granted["valid_ms"]))
        send(answer)
        if granted is None:
            return
        # Serve this lock's release/extend on this same thread until released.
        while True:
            op = ctx.ops.get()
            if op is None:
                return
            if op["op"] == "extend":
                try:
                    r = self.adapter.extend(granted["handle"], op.get("ttl_ms")) or {}
                    a = {"id": op["id"], "ok": True}
                    if r.get("valid_ms") is not None:
                        a["valid_ms"] = max(0, int(r["valid_ms"]))
                    send(a)
                except Exception as exc:
                    self.error(op["id"], exc)
                continue
            ctx.answered_release = True
            try:
                self.adapter.release(granted["handle"])
                send({"id": op["id"], "ok": True})
            except Exception as exc:
                self.error(op["id"], exc)
            return

    def overdue(self, ctx):
        with self.mu:
            if ctx.answered or ctx.cancelled:
                return
            ctx.cancelled = True
            try:
                kind = getattr(self.adapter, "overdue", lambda ctx: "timeout")(ctx) or "timeout"
            except Exception:
                kind = "timeout"
            send({"id": ctx.req["id"], "ok": False, "error": kind,
                  "message": "no answer from the library %.1fs past the acquire's timeout" % OVERDUE})
        self.cancel(ctx)

    def cancel(self, ctx):
        cancel = getattr(self.adapter, "cancel", None)
        if cancel:
            try:
                cancel(ctx)
            except Exception as exc:
                log("cancel:", describe(exc))

    def dispatch(self, req):
        op = req.get("op")
        if op == "acquire":
            ctx = Ctx(self, req)
            with self.mu:
                self.pending[req["id"]] = ctx
            timeout_ms = req.get("timeout_ms")
            if isinstance(timeout_ms, (int, float)) and timeout_ms > 0:
                timer = threading.Timer(timeout_ms / 1000.0 + OVERDUE, self.overdue, args=(ctx,))
                timer.daemon = True
                ctx.data["overdue"] = timer
                timer.start()
            threading.Thread(target=self.run_lock, args=(ctx,), daemon=True).start()
        elif op in ("release", "extend"):
            with self.mu:
                ctx = self.held.get(req.get("lock"))
                if ctx is not None and op == "release":
                    del self.held[req["lock"]]
            if ctx is None:
                send({"id": req["id"], "ok": False, "error": "not_owner", "message": "no such lock"})
            elif op == "extend" and not hasattr(self.adapter, "extend"):
                send({"id": req["id"], "ok": False, "error": "error", "message": "extend not supported"})
            else:
                ctx.ops.put(req)
        elif op == "cancel":
            with self.mu:
                ctx = self.pending.get(req.get("target"))
                if ctx is None or ctx.cancelled:
                    return
                ctx.cancelled = True
                send({"id": req["target"], "ok": False, "error": "cancelled"})
            self.cancel(ctx)
        elif "id" in req:
            send({"id": req["id"], "ok": False, "error": "error", "message": "unknown op %r" % op})


def run(hello, make_adapter):
    send(hello)
    if "--hello" in sys.argv[1:]:
        return
    loop = Loop(make_adapter())
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
        except ValueError:
            log("not JSON, ignored:", line[:200])
            continue
        loop.dispatch(req)
    # stdin EOF: held locks are left to expire; close the client, bounded.
    closer = threading.Thread(target=getattr(loop.adapter, "close", lambda: None), daemon=True)
    closer.start()
    closer.join(2)
    sys.stdout.flush()
    os._exit(0)
