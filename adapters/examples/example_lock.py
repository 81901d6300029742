#!/usr/bin/python3
"""A complete lockbench adapter (protocol 1): Redis SET NX PX with a random
value, released by compare-and-delete. Copy it and put your own lock in
acquire() and release(). Needs redis-py (Debian: python3-redis)."""
import json, os, secrets, sys, threading
import redis

HELLO = {"hello": "lockbench-adapter", "protocol": 1, "name": "example-py",
         "library": "redis-py", "library_version": redis.__version__,
         "backend": "redis", "nodes": 1, "lease": "ttl",
         "capabilities": {"token": False, "extend": False, "blocking": False}}
# Deletes the key only if it still holds our value: never someone else's lock.
RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
out, mu = threading.Lock(), threading.Lock()
held, pending = {}, {}  # lock id -> (key, value); acquire id -> cancelled?

def send(obj):
    with out:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()

def client():
    host, _, port = os.environ["LOCKBENCH_REDIS_ADDRS"].split(",")[0].rpartition(":")
    tls = os.environ.get("LOCKBENCH_REDIS_CACERT")
    return redis.Redis(host=host, port=int(port), socket_timeout=2, socket_connect_timeout=2,
                       password=os.environ.get("LOCKBENCH_REDIS_PASSWORD") or None,
                       ssl=bool(tls), ssl_ca_certs=tls or None)

def fail(rid, exc):
    # The class name only: a message could carry a secret.
    cls = {redis.TimeoutError: "timeout", redis.ConnectionError: "unavailable"}.get(type(exc), "error")
    send({"id": rid, "ok": False, "error": cls, "message": type(exc).__name__})

def acquire(r, req):
    value, got, err = secrets.token_hex(16), None, None
    try:  # one attempt: timeout_ms is 0, lockbench retries
        got = r.set(req["key"], value, nx=True, px=req["ttl_ms"])
    except redis.RedisError as exc:
        err = exc
    with mu:
        if pending.pop(req["id"]):  # cancelled, and answered so already
            if got:
                r.eval(RELEASE, 1, req["key"], value)
            return
        if got:
            held[req["id"]] = (req["key"], value)
    if err:
        return fail(req["id"], err)
    send({"id": req["id"], "ok": True, "waited": False} if got else
         {"id": req["id"], "ok": False, "error": "not_acquired"})

def release(r, req):
    with mu:
        key_value = held.pop(req["lock"], None)
    try:
        ok = key_value is not None and r.eval(RELEASE, 1, *key_value) == 1
        send({"id": req["id"], "ok": True} if ok else {"id": req["id"], "ok": False, "error": "not_owner"})
    except redis.RedisError as exc:
        fail(req["id"], exc)

def main():
    send(HELLO)
    if "--hello" in sys.argv:
        return
    r = client()
    for line in sys.stdin:  # exits on EOF
        req = json.loads(line)
        if req["op"] == "cancel":
            with mu:
                if req["target"] in pending and not pending[req["target"]]:
                    pending[req["target"]] = True
                    send({"id": req["target"], "ok": False, "error": "cancelled"})
        elif req["op"] in ("acquire", "release"):
            if req["op"] == "acquire":
                pending[req["id"]] = False
            threading.Thread(target=globals()[req["op"]], args=(r, req), daemon=True).start()
        else:
            send({"id": req["id"], "ok": False, "error": "error", "message": "unsupported"})

main()
