#!/usr/bin/python3
"""Self-test of the lockbench adapters against real servers started here.

Starts redis-server x5 (with a password) and a ZooKeeper on 127.0.0.1 random
ports in a temp dir, runs each adapter through the protocol, and prints one
line per check. Every wait is bounded; every process started here is killed
by pid at the end. Usage: selftest.py [adapter-name ...]
"""

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
NODE = os.path.join(HERE, "..", "node")
EXAMPLES = os.path.join(HERE, "..", "examples")
PY = "/usr/bin/python3"
SECRET = "s3cret-%d" % random.randrange(10**9)
TTL_MS, ACQ_MS = 1000, 3000

ADAPTERS = {
    "node-noop": ["node", os.path.join(NODE, "noop.js")],
    "py-noop": [PY, os.path.join(HERE, "noop.py")],
    "node-redlock": ["node", os.path.join(NODE, "node-redlock.js")],
    "node-redis-semaphore": ["node", os.path.join(NODE, "node-redis-semaphore.js")],
    "py-redis-lock": [PY, os.path.join(HERE, "py_redis_lock.py")],
    "py-kazoo": [PY, os.path.join(HERE, "py_kazoo.py")],
    "example-py": [PY, os.path.join(EXAMPLES, "example_lock.py")],
    "example-js": ["node", os.path.join(EXAMPLES, "example_lock.js")],
}

results = []


def check(name, ok, detail=""):
    results.append((name, ok))
    print("%s %-60s %s" % ("PASS" if ok else "FAIL", name, detail), flush=True)


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Servers:
    def __init__(self, tmp):
        self.tmp = tmp
        self.redis = []  # [port, Popen or None]
        self.zk = None

    def start_redis(self, i=None):
        if i is None:
            self.redis.append([free_port(), None])
            i = len(self.redis) - 1
        port = self.redis[i][0]
        self.redis[i][1] = subprocess.Popen(
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--requirepass", SECRET, "--dir", self.tmp],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 5
        while time.time() < deadline and self.cli(i, "PING") != "PONG":
            time.sleep(0.05)

    def stop_redis(self, i):
        p = self.redis[i][1]
        if p:
            p.kill()
            p.wait(5)
            self.redis[i][1] = None

    def cli(self, i, *args):
        r = subprocess.run(["redis-cli", "-p", str(self.redis[i][0]), "--no-auth-warning", "-a", SECRET] + list(args),
                           capture_output=True, text=True, timeout=5)
        return r.stdout.strip()

    def start_zk(self):
        self.start_zk_on(free_port())

    def start_zk_on(self, port):
        d = os.path.join(self.tmp, "zk")
        os.makedirs(os.path.join(d, "data"), exist_ok=True)
        self.zk_port = port
        with open(os.path.join(d, "zoo.cfg"), "w") as f:
            # tickTime 200 ms lets sessions be as short as 400 ms.
            f.write("tickTime=200\ndataDir=%s/data\nclientPort=%d\nclientPortAddress=127.0.0.1\n"
                    "admin.enableServer=false\nminSessionTimeout=400\n4lw.commands.whitelist=ruok\n"
                    % (d, self.zk_port))
        self.zk = subprocess.Popen(
            ["java", "-cp", "/usr/share/java/zookeeper.jar:/etc/zookeeper/conf",
             "org.apache.zookeeper.server.ZooKeeperServerMain", os.path.join(d, "zoo.cfg")],
            stdout=open(os.path.join(d, "log"), "w"), stderr=subprocess.STDOUT)
        import socket
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.zk_port), 1) as s:
                    s.sendall(b"ruok")
                    if s.recv(4) == b"imok":
                        return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError("ZooKeeper did not start")

    def start_zk_again(self):
        port = self.zk_port
        self.start_zk_on(port)

    def stop_zk(self):
        if self.zk:
            self.zk.kill()
            self.zk.wait(10)
            self.zk = None

    def env(self):
        return {
            "LOCKBENCH_REDIS_ADDRS": ",".join("127.0.0.1:%d" % p for p, _ in self.redis),
            "LOCKBENCH_REDIS_PASSWORD": SECRET,
            "LOCKBENCH_ZK_SERVERS": "127.0.0.1:%d" % getattr(self, "zk_port", 0),
            "LOCKBENCH_ADAPTER_TTL_MS": str(TTL_MS),
            "LOCKBENCH_ADAPTER_ACQUIRE_TIMEOUT_MS": str(ACQ_MS),
            "LOCKBENCH_ADAPTER_WORKERS": "4",
            "LOCKBENCH_ADAPTER_INSTANCE": "0",
        }

    def close(self):
        for i in range(len(self.redis)):
            self.stop_redis(i)
        self.stop_zk()


class Adapter:
    """One adapter process, and the answers and events it sends."""

    def __init__(self, name, env, tmp):
        self.name = name
        self.log_path = os.path.join(tmp, "%s-%d.log" % (name, random.randrange(10**6)))
        self.p = subprocess.Popen(ADAPTERS[name], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=open(self.log_path, "w"), env=dict(os.environ, **env),
                                  text=True, bufsize=1)
        self.cv = threading.Condition()
        self.answers, self.events, self.lines = {}, [], []
        self.next_id = 0
        self.wmu = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            msg = json.loads(line)  # a non-JSON line fails the reader loudly
            with self.cv:
                self.lines.append(msg)
                if "id" in msg:
                    if msg["id"] in self.answers:
                        msg = dict(msg, duplicate=True)
                    self.answers.setdefault(msg["id"], (time.time(), msg))
                elif "event" in msg:
                    self.events.append((time.time(), msg))
                self.cv.notify_all()

    def wait_for(self, pred, timeout):
        with self.cv:
            self.cv.wait_for(pred, timeout)
            return pred()

    def hello(self, timeout=5):
        self.wait_for(lambda: len(self.lines) > 0, timeout)
        return self.lines[0] if self.lines else None

    def send(self, **req):
        with self.wmu:
            if "id" not in req:
                self.next_id += 1
                req["id"] = self.next_id
            self.p.stdin.write(json.dumps(req) + "\n")
            self.p.stdin.flush()
        return req["id"]

    def answer(self, rid, timeout):
        self.wait_for(lambda: rid in self.answers, timeout)
        a = self.answers.get(rid)
        return a[1] if a else {"error": "no answer within %.1fs" % timeout}

    def call(self, timeout=None, **req):
        t0 = time.time()
        rid = self.send(**req)
        a = self.answer(rid, timeout or (req.get("timeout_ms", 0) / 1000.0 + 5))
        return rid, a, time.time() - t0

    def acquire(self, key, ttl=TTL_MS, timeout=ACQ_MS, **kw):
        return self.call(op="acquire", key=key, ttl_ms=ttl, timeout_ms=timeout, **kw)

    def close(self, timeout=5):
        try:
            self.p.stdin.close()
        except OSError:
            pass
        try:
            return self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait(5)
            return None

    def log(self):
        with open(self.log_path) as f:
            return f.read()


def grab(ad, key, ttl, timeout_ms, blocking):
    """Acquire as lockbench would: one blocking request, or retries of one attempt."""
    if blocking:
        return ad.acquire(key, ttl=ttl, timeout=timeout_ms)
    deadline = time.time() + timeout_ms / 1000.0
    t0 = time.time()
    while True:
        rid, a, _ = ad.acquire(key, ttl=ttl, timeout=0)
        if a.get("ok") or a.get("error") != "not_acquired" or time.time() > deadline:
            return rid, a, time.time() - t0
        time.sleep(0.01)


def redis_keys_present(srv, key):
    return [i for i in range(len(srv.redis)) if srv.redis[i][1] and srv.cli(i, "EXISTS", key) == "1"]


def test_adapter(name, srv, tmp):
    print("== %s" % name, flush=True)
    env = srv.env()
    t0 = time.time()
    out = subprocess.run(ADAPTERS[name] + ["--hello"], capture_output=True, text=True, timeout=10,
                         env=dict(os.environ, **env))
    lines = out.stdout.splitlines()
    hello = json.loads(lines[0]) if lines else {}
    check(name + ": --hello prints one line and exits 0", out.returncode == 0 and len(lines) == 1,
          "%.2fs" % (time.time() - t0))
    print("   hello: " + (lines[0] if lines else "-"))
    a = Adapter(name, env, tmp)
    h = a.hello()
    check(name + ": hello at start equals --hello, protocol 1",
          h == hello and h.get("hello") == "lockbench-adapter" and h.get("protocol") == 1)
    caps = hello.get("capabilities", {})
    blocking = caps.get("blocking")
    acq = ACQ_MS if blocking else 0
    key = "lockbench:selftest:%s:%d:" % (name, random.randrange(10**6))

    rid, ans, dt = a.acquire(key + "basic", timeout=acq)
    check(name + ": acquire ok", ans.get("ok") is True, "%s %.3fs" % (json.dumps(ans), dt))
    _, rel, dt = a.call(op="release", lock=rid)
    check(name + ": release ok", rel.get("ok") is True, "%s %.3fs" % (json.dumps(rel), dt))
    _, rel2, _ = a.call(op="release", lock=rid)
    check(name + ": second release is not_owner", rel2.get("error") == "not_owner", json.dumps(rel2))

    if hello.get("backend") == "none":
        toks = [a.acquire("k", timeout=0)[1].get("token") for _ in range(5)]
        check(name + ": tokens increase", toks == sorted(toks) and len(set(toks)) == 5, str(toks))
        n, t0 = 2000, time.time()
        for _ in range(n):
            rid = a.send(op="acquire", key="k", ttl_ms=1000, timeout_ms=0)
            a.answer(rid, 5)
            a.answer(a.send(op="release", lock=rid), 5)
        check(name + ": %d sequential acquire+release cycles" % n, True,
              "%.0f us per cycle (wall, both sides)" % ((time.time() - t0) / n * 1e6))
        finish(name, a)
        return

    # Exclusion: two processes, three workers each, one key.
    b = Adapter(name, env, tmp)
    b.hello()
    held, mu, errors = [], threading.Lock(), []

    def worker(ad, stop_at):
        while time.time() < stop_at:
            rid, ans, _ = grab(ad, key + "excl", TTL_MS, 2000, blocking)
            if not ans.get("ok"):
                if ans.get("error") not in ("not_acquired",):
                    errors.append(ans)
                continue
            t1 = time.time()
            time.sleep(0.02)
            t2 = time.time()
            with mu:
                held.append((t1, t2, ans.get("token")))
            r = ad.call(op="release", lock=rid)[1]
            if not r.get("ok"):
                errors.append(r)

    stop_at = time.time() + 4
    ts = [threading.Thread(target=worker, args=(ad, stop_at)) for ad in (a, b) for _ in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(30)
    held.sort()
    overlaps = sum(1 for x, y in zip(held, held[1:]) if y[0] < x[1])
    check(name + ": exclusion, 2 processes x 3 workers, 4 s", overlaps == 0 and len(held) > 5 and not errors,
          "%d grants, %d overlaps, errors %s" % (len(held), overlaps, errors[:2]))
    if caps.get("token"):
        toks = [t for _, _, t in held]
        check(name + ": tokens strictly increase across holders",
              all(x < y for x, y in zip(toks, toks[1:])), "%s..%s" % (toks[:3], toks[-3:]))

    if caps.get("extend"):
        rid, ans, _ = a.acquire(key + "ext", ttl=1000, timeout=acq)
        time.sleep(0.5)
        _, ext, dt = a.call(op="extend", lock=rid, ttl_ms=6000)
        time.sleep(1.0)  # past the original TTL
        _, other, _ = grab(b, key + "ext", 1000, 300, blocking)
        _, rel, _ = a.call(op="release", lock=rid)
        check(name + ": extend keeps the lock past its first TTL",
              ans.get("ok") and ext.get("ok") and other.get("error") == "not_acquired" and rel.get("ok"),
              "extend %s %.3fs; other %s" % (json.dumps(ext), dt, json.dumps(other)))

    # Cancel: b waits for a's lock, is cancelled, and must not keep a late grant.
    if blocking:
        rid, ans, _ = a.acquire(key + "cancel", ttl=2000, timeout=acq)
        brid = b.send(op="acquire", key=key + "cancel", ttl_ms=5000, timeout_ms=3000)
        time.sleep(0.3)
        tc = time.time()
        b.send(op="cancel", target=brid)
        canc = b.answer(brid, 2)
        dt = time.time() - tc
        a.call(op="release", lock=rid)
        time.sleep(4)  # any retry loop still running in b ends (and releases)
        dup = sum(1 for m in b.lines if m.get("id") == brid)
        if hello["backend"] == "redis":
            rk = ("mutex:" if name == "node-redis-semaphore" else "") + key + "cancel"
            left = redis_keys_present(srv, rk)
            free = not left
            detail = "key still on servers %s" % left
        else:
            _, c, _ = a.acquire(key + "cancel", timeout=500)
            free = c.get("ok")
            detail = json.dumps(c)
        check(name + ": cancel answers cancelled, once, and a late grant is released",
              canc.get("error") == "cancelled" and dup == 1 and free,
              "cancelled after %.3fs; %s" % (dt, detail))

    lease = hello.get("lease")
    if lease == "ttl":
        rid, ans, _ = a.acquire(key + "exp", ttl=300, timeout=acq)
        time.sleep(0.6)
        brid, other, _ = grab(b, key + "exp", 1000, 1000, blocking)
        _, rel, _ = a.call(op="release", lock=rid)
        b.call(op="release", lock=brid)
        check(name + ": release after expiry (and another holder) is not_owner",
              ans.get("ok") and other.get("ok") and rel.get("error") == "not_owner", json.dumps(rel))
    elif lease == "renewed":
        rid, ans, _ = a.acquire(key + "lost", ttl=1000, timeout=acq)
        time.sleep(2.5)  # 2.5 TTLs: only the refresh keeps it
        _, other, _ = b.acquire(key + "lost", timeout=200)
        t1 = time.time()
        srv.cli(0, "DEL", "mutex:" + key + "lost")
        got = a.wait_for(lambda: any(e[1].get("lock") == rid for e in a.events), 3)
        ev = [e for e in a.events if e[1].get("lock") == rid]
        _, rel, _ = a.call(op="release", lock=rid)
        check(name + ": lease renewed past its TTL", other.get("error") == "not_acquired", json.dumps(other))
        check(name + ": DEL of the key gives a lost event, then release is not_owner",
              got and rel.get("error") == "not_owner",
              "%s after %.3fs; release %s" % (json.dumps(ev[0][1]) if ev else "-", (ev[0][0] - t1) if ev else -1,
                                              json.dumps(rel)))
    elif lease == "session":
        rid, ans, _ = a.acquire(key + "lost", timeout=acq)
        os.kill(a.p.pid, signal.SIGSTOP)
        t1 = time.time()
        time.sleep(3 * TTL_MS / 1000.0)  # three session timeouts
        brid, other, _ = b.acquire(key + "lost", timeout=3000)
        os.kill(a.p.pid, signal.SIGCONT)
        got = a.wait_for(lambda: any(e[1].get("lock") == rid for e in a.events), 15)
        ev = [e for e in a.events if e[1].get("lock") == rid]
        _, rel, _ = a.call(op="release", lock=rid)
        b.call(op="release", lock=brid)
        check(name + ": SIGSTOP past the session: another holder, then lost, release not_owner",
              ans.get("ok") and other.get("ok") and got and rel.get("error") == "not_owner"
              and other.get("token", 0) > ans.get("token", 0),
              "token %s then %s; %s %.1fs after SIGSTOP; release %s" % (
                  ans.get("token"), other.get("token"), json.dumps(ev[0][1]) if ev else "no event",
                  (ev[0][0] - t1) if ev else -1, json.dumps(rel)))

    # Server down, last: stop a majority (redlock) or the only server.
    if hello["backend"] == "redis":
        down = [0, 1, 2] if hello.get("nodes") == 5 else [0]
        for i in down:
            srv.stop_redis(i)
    else:
        srv.stop_zk()
    time.sleep(0.3)
    # redlock 4.2.0 retries 10 times whatever timeout_ms says: wait 15 s more
    # for its answer (lockbench would have cancelled it at timeout_ms).
    rid, ans, dt = a.call(timeout=acq / 1000.0 + 15, op="acquire", key=key + "down", ttl_ms=TTL_MS, timeout_ms=acq)
    check(name + ": server down gives unavailable (or timeout)", ans.get("error") in ("unavailable", "timeout"),
          "%s after %.2fs (acquire timeout %d ms)" % (json.dumps(ans), dt, acq))
    if hello["backend"] == "redis":
        for i in down:
            srv.start_redis(i)
    else:
        srv.start_zk_again()
    b.close()
    finish(name, a)


def finish(name, a):
    t0 = time.time()
    rc = a.close()
    check(name + ": exits on stdin EOF", rc == 0, "rc %s after %.2fs" % (rc, time.time() - t0))
    text = a.log() + json.dumps(a.lines)
    check(name + ": the password appears nowhere in its output", SECRET not in text)


def main():
    names = sys.argv[1:] or list(ADAPTERS)
    tmp = tempfile.mkdtemp(prefix="lockbench-selftest-")
    srv = Servers(tmp)
    try:
        for _ in range(5):
            srv.start_redis()
        if any(n == "py-kazoo" for n in names):
            srv.start_zk()
        for n in names:
            try:
                test_adapter(n, srv, tmp)
            except Exception as exc:
                check(n + ": ran to the end", False, "%s: %s" % (type(exc).__name__, exc))
    finally:
        srv.close()
        shutil.rmtree(tmp, ignore_errors=True)
    failed = [n for n, ok in results if not ok]
    print("%d checks, %d failed" % (len(results), len(failed)))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
