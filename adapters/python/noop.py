#!/usr/bin/python3
"""Grants every acquire at once: measures what the protocol itself costs."""

import itertools

import lockbench_protocol as proto

HELLO = {
    "hello": "lockbench-adapter", "protocol": 1, "name": "py-noop",
    "library": "none", "library_version": "0", "backend": "none", "nodes": 0, "lease": "ttl",
    "capabilities": {"token": True, "extend": False, "blocking": False},
}


class Noop:
    def __init__(self):
        self.counter = itertools.count(1)

    def acquire(self, req, ctx):
        n = next(self.counter)  # atomic under the GIL
        return {"handle": n, "token": n, "waited": False, "valid_ms": req.get("ttl_ms")}

    def release(self, handle):
        pass

    def classify(self, exc):
        return "error"


if __name__ == "__main__":
    proto.run(HELLO, Noop)
