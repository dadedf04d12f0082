#!/usr/bin/env python3
"""Tessera request signing, Python 3 standard library only.

    python3 sign.py vectors PATH_TO_VECTORS_JSON   # check every published vector

Canonical string: <timestamp>.<METHOD>.<path>.<body>, where body is the exact bytes sent
(or the two characters {} when empty). Signature: lower-case hex HMAC-SHA256(secret, canonical).
"""
import hashlib
import hmac
import json
import secrets
import sys
import time


def _bytes(value):
    if value is None:
        return b""
    return value if isinstance(value, (bytes, bytearray)) else str(value).encode("utf-8")


def canonical(timestamp, method, path, body=b""):
    body = _bytes(body) or b"{}"
    return b".".join([_bytes(timestamp), method.upper().encode("ascii"), _bytes(path), body])


def sign(secret, timestamp, method, path, body=b""):
    """Lower-case hex HMAC-SHA256 of the canonical string. Pass body as the exact bytes you send."""
    return hmac.new(_bytes(secret), canonical(timestamp, method, path, body), hashlib.sha256).hexdigest()


def signed_headers(key_id, secret, method, path, body=b""):
    """Headers for one request, with a fresh timestamp and nonce. Call again for every retry."""
    timestamp = str(time.time_ns() // 1_000_000)
    return {
        "content-type": "application/json",
        "x-white-label-key-id": key_id,
        "x-white-label-timestamp": timestamp,
        "x-white-label-nonce": secrets.token_urlsafe(16),
        "x-white-label-signature": sign(secret, timestamp, method, path, body),
    }


def check_vectors(path):
    with open(path, encoding="utf-8") as f:
        vectors = json.load(f)["vectors"]
    failures = 0
    for v in vectors:
        got_canonical = canonical(v["timestamp"], v["method"], v["path"], v["body"]).decode("utf-8")
        got = sign(v["secret"], v["timestamp"], v["method"], v["path"], v["body"])
        ok = True
        if got_canonical != v["canonical"]:
            ok = False
            print(f"MISMATCH {v['name']}: canonical {got_canonical!r} != expected {v['canonical']!r}")
        if got != v["signature"]:
            ok = False
            print(f"MISMATCH {v['name']}: signature {got} != expected {v['signature']}")
        if ok:
            print(f"ok {v['name']}")
        else:
            failures += 1
    if not vectors:
        print("no vectors found")
        return 1
    print(f"{len(vectors)} vectors, {failures} mismatches")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "vectors":
        sys.exit(check_vectors(sys.argv[2]))
    print("usage: python3 sign.py vectors PATH_TO_VECTORS_JSON", file=sys.stderr)
    sys.exit(2)
