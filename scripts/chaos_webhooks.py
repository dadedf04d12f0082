"""Outbound webhooks under chaos (issue 25, the acceptance): driver for scripts/chaos-webhooks.sh.
Python standard library only.

Starts the sandbox (its own process, so it outlives the kills), a receiver on loopback and a real
`tessera serve`; registers the receiver as the account's webhook endpoint (every event type);
then makes `--payments` sandbox ticket payments (initialize, then the sandbox's control API pays
the charge and sends its webhook; a missed webhook is confirmed by the server's polling) from a
few threads while a killer SIGKILLs the server every `--kill-every` seconds and starts it again.
The killer stops once every payment is settled and the receiver holds one verified delivery of
every purchase (or at the deadline).

The receiver verifies each delivery as the Standard Webhooks specification says (the PyPI
package is not installed here): HMAC-SHA256 under the base64-decoded secret (after `whsec_`) of
`<webhook-id>.<webhook-timestamp>.<body>`, base64, compared with each `v1,` entry of the
space-separated `webhook-signature`, and a timestamp within 5 minutes. It answers 500 to a random
10 % (`--first-fail`) of first attempts, 2xx to everything else.

Asserts (exit 1 on any violation):
- exactly `--payments` distinct verified `ticket.purchase.confirmed` ids, whose payments are
  exactly the settled references;
- every request verified; second successes of an id (a kill while the request was on the wire,
  D17.41) at most the number of kills, and printed;
- the received sequences are 1..N with no hole, and equal GET /events (gap-free 1..N, same ids,
  same bodies' type, sequence and timestamp);
and prints the delivery throughput and p50/p99/max commit→delivery (commit time = the event's
`timestamp`; delivery = the first verified 2xx).

    python3 scripts/chaos_webhooks.py --bin target/debug/tessera [--payments 10000] [--database-url URL]
"""

import argparse
import base64
import hashlib
import hmac
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from datetime import datetime

V1 = "/api/white-label/v1"
PROVIDERS = ["provider_a", "provider_b", "provider_c"]
SCOPES = "settings:read,settings:write,campaigns:read,campaigns:write,tickets:read,tickets:write,payments:write"
TOLERANCE_SECONDS = 5 * 60


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Down(Exception):
    """No answer: connection refused or cut (the server was killed)."""


def http(method, url, body=None, headers=None, timeout=10):
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    req = urllib.request.Request(url, data=data, method=method, headers=dict(headers or {}))
    if data is not None:
        req.add_header("content-type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            raw = r.read()
            return r.status, (json.loads(raw) if raw else None)
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            return e.code, json.loads(raw)
        except ValueError:
            return e.code, {"raw": raw.decode(errors="replace")}
    except (urllib.error.URLError, ConnectionError, socket.timeout, TimeoutError, OSError) as e:
        raise Down(str(e)) from e


def rfc3339_ms(s):
    """Unix milliseconds of an RFC 3339 time."""
    return int(datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp() * 1000)


def verify(secret, headers, body):
    """Standard Webhooks verification; returns None when valid, else why not."""
    msg_id, ts, sigs = headers.get("webhook-id"), headers.get("webhook-timestamp"), headers.get("webhook-signature")
    if not (msg_id and ts and sigs):
        return "missing header"
    try:
        ts_int = int(ts)
    except ValueError:
        return "bad timestamp"
    if abs(time.time() - ts_int) > TOLERANCE_SECONDS:
        return "timestamp out of tolerance"
    key = base64.b64decode(secret[len("whsec_"):] if secret.startswith("whsec_") else secret)
    expected = base64.b64encode(hmac.new(key, f"{msg_id}.{ts}.".encode() + body, hashlib.sha256).digest()).decode()
    for part in sigs.split(" "):
        version, _, sig = part.partition(",")
        if version == "v1" and hmac.compare_digest(sig, expected):
            return None
    return "no signature matches"


class Receiver:
    """The endpoint: verifies, fails a share of first attempts, records everything."""

    def __init__(self, first_fail, seed):
        self.lock = threading.Lock()
        self.rng = random.Random(seed)
        self.first_fail = first_fail
        self.secret = None
        self.attempts = {}      # webhook-id -> requests seen
        self.successes = {}     # webhook-id -> verified 2xx answers
        self.first_ok = {}      # webhook-id -> (received ms, parsed body)
        self.refused = 0
        self.unverified = []
        self.requests = 0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                n = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(n)
                status = receiver.receive({k.lower(): v for k, v in self.headers.items()}, body)
                self.send_response(status)
                self.send_header("content-length", "0")
                self.end_headers()

        class Server(ThreadingHTTPServer):
            def handle_error(self, request, client_address):
                pass  # a sender killed mid-request resets its connection: expected here

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def receive(self, headers, body):
        now_ms = int(time.time() * 1000)
        with self.lock:
            self.requests += 1
            secret = self.secret
        why = verify(secret, headers, body) if secret else "no secret yet"
        msg_id = headers.get("webhook-id", "")
        with self.lock:
            if why:
                self.unverified.append((msg_id, why))
                return 400
            seen = self.attempts.get(msg_id, 0)
            self.attempts[msg_id] = seen + 1
            if seen == 0 and self.rng.random() < self.first_fail:
                self.refused += 1
                return 500
            self.successes[msg_id] = self.successes.get(msg_id, 0) + 1
            if msg_id not in self.first_ok:
                self.first_ok[msg_id] = (now_ms, json.loads(body))
            return 204

    def confirmed(self):
        with self.lock:
            return sum(1 for _, e in self.first_ok.values() if e.get("type") == "ticket.purchase.confirmed")


class Chaos:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.data = tempfile.mkdtemp(prefix="tessera-chaos-webhooks-")
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.sandbox_port = free_port()
        self.sandbox = f"http://127.0.0.1:{self.sandbox_port}"
        self.db_args = ["--data-dir", self.data] + (["--database-url", args.database_url] if args.database_url else [])
        self.env = dict(os.environ, RUST_LOG=os.environ.get("RUST_LOG", "warn"),
                        TESSERA_WEBHOOKS_RETRY_SCALE=str(args.retry_scale),
                        TESSERA_WORKER_POLL_MS=str(args.poll_ms), TESSERA_WEBHOOKS_TIMEOUT_MS=str(args.timeout_ms))
        self.server = None
        self.lock = threading.Lock()
        self.stop_buyers = threading.Event()
        self.stop_killer = threading.Event()
        self.reserved = 0
        self.settled = set()
        self.unknown = 0
        self.statuses = {}
        self.kills = 0
        self.violations = []
        self.receiver = Receiver(args.first_fail, args.seed)

    # --- processes -------------------------------------------------------------------------------

    def config_file(self):
        path = os.path.join(self.data, "chaos-webhooks.toml")
        lines = [
            "[security]", "rate_limit_per_account = 0", "rate_limit_per_ip = 0", "auth_failure_limit = 0",
            "allow_private_endpoints = true",
            "", "[payments]", "verify_interval_seconds = 0.5",
            "", "[workers]", f"poll_ms = {self.args.poll_ms}", f"lease_seconds = {self.args.lease_seconds}",
            "", "[webhooks]", f"retry_scale = {self.args.retry_scale}", f"timeout_ms = {self.args.timeout_ms}",
        ]
        for p in PROVIDERS:
            lines += ["", f"[providers.{p}]", f'base_url = "{self.sandbox}/{p}"', f'secret_key = "sk_test_platform_{p}"']
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        return path

    def admin(self, *args):
        out = subprocess.run([self.args.bin, "admin", *self.db_args, *args, "--json"], capture_output=True, text=True,
                             env=self.env)
        if out.returncode != 0:
            raise SystemExit(f"admin {args}: {out.stderr}")
        return json.loads(out.stdout)

    def start_server(self):
        log = open(os.path.join(self.data, "server.log"), "ab")
        self.server = subprocess.Popen(
            [self.args.bin, "serve", *self.db_args, "--config", self.cfg, "--listen", f"127.0.0.1:{self.port}"],
            stdout=log, stderr=log, env=self.env)
        for _ in range(600):
            if self.server.poll() is not None:
                raise SystemExit(f"server exited with {self.server.returncode}; log: {self.data}/server.log")
            try:
                if http("GET", self.base + "/readyz", timeout=1)[0] == 200:
                    time.sleep(0.01)  # signed timestamps must be later than the server's start (D2.6)
                    return
            except Down:
                pass
            time.sleep(0.05)
        raise SystemExit(f"server did not become ready; log: {self.data}/server.log")

    def setup(self):
        self.cfg = self.config_file()
        self.admin("account", "create", "--slug", "hooks", "--name", "Webhook Chaos")
        self.admin("domain", "add", "--account", "hooks", "--hostname", "hooks.example.com", "--primary", "--verified")
        k = self.admin("key", "create", "--account", "hooks", "--kind", "private", "--scopes", SCOPES)
        self.key_id, self.secret = k["keyId"], k["secret"]
        log = open(os.path.join(self.data, "sandbox.log"), "ab")
        self.sandbox_proc = subprocess.Popen(
            [self.args.bin, "sandbox", "--data-dir", self.data, "--listen", f"127.0.0.1:{self.sandbox_port}",
             "--notify-url", self.base, "--smtp-listen", f"127.0.0.1:{free_port()}"], stdout=log, stderr=log,
            env=self.env)
        self.start_server()
        status, v = self.until_answered("POST", V1 + "/webhook-endpoints",
                                        {"url": f"http://127.0.0.1:{self.receiver.port}/hook",
                                         "description": "chaos receiver"})
        if status != 201:
            raise SystemExit(f"creating the endpoint: {status} {v}")
        with self.receiver.lock:
            self.receiver.secret = v["data"]["secret"]
        now = time.time()
        fmt = lambda t: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
        status, v = self.until_answered("POST", V1 + "/campaigns", {
            "title": f"Webhook Chaos {uuid.uuid4().hex[:8]}", "description": "Ten thousand paid tickets.",
            "campaign_type": "ticketing", "start_date": fmt(now - 86400), "end_date": fmt(now + 30 * 86400),
            "status": "approved"})
        if status != 201:
            raise SystemExit(f"creating the campaign: {status} {v}")
        self.campaign = v["data"]["id"]
        status, v = self.until_answered("POST", V1 + "/ticket-types", {
            "campaignId": self.campaign, "name": "Seat", "price": 5, "quantity_available": 10 * self.args.payments,
            "max_per_person": 10})
        if status != 201:
            raise SystemExit(f"creating the ticket type: {status} {v}")
        self.ticket_type = v["data"]["id"]

    def teardown(self):
        for p in (self.server, getattr(self, "sandbox_proc", None)):
            if p and p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
        self.receiver.server.shutdown()

    # --- requests --------------------------------------------------------------------------------

    def signed(self, method, path, body=None):
        raw = b"" if body is None else json.dumps(body).encode()
        ts = str(int(time.time() * 1000))
        canonical = f"{ts}.{method}.{path}.".encode() + (raw or b"{}")
        h = {
            "x-white-label-key-id": self.key_id,
            "x-white-label-timestamp": ts,
            "x-white-label-nonce": uuid.uuid4().hex,
            "x-white-label-signature": hmac.new(self.secret.encode(), canonical, hashlib.sha256).hexdigest(),
        }
        return http(method, self.base + path, raw if body is not None else None, h)

    def until_answered(self, method, path, body=None, tries=1200):
        for _ in range(tries):
            try:
                status, v = self.signed(method, path, body)
                if status == 401 and (v or {}).get("code") == "stale_timestamp":
                    time.sleep(0.05)
                    continue
                return status, v
            except Down:
                time.sleep(0.05)
        raise SystemExit(f"{method} {path}: no answer")

    def fail(self, msg):
        with self.lock:
            self.violations.append(msg)

    # --- load and chaos --------------------------------------------------------------------------

    def buyer(self, n):
        while not self.stop_buyers.is_set():
            with self.lock:
                if self.reserved >= self.args.payments:
                    return
                self.reserved += 1
                serial = self.reserved
            ok = False
            try:
                status, v = self.signed("POST", V1 + "/payments/initialize", {
                    "campaign_id": self.campaign, "ticket_id": self.ticket_type,
                    "email": f"buyer{n}-{serial}@example.com", "quantity": 1, "full_name": "Ama Mensah",
                    "callbackUrl": "https://hooks.example.com/thanks"})
                with self.lock:
                    self.statuses[status] = self.statuses.get(status, 0) + 1
                if status == 200:
                    reference = v["data"]["reference"]
                    # The sandbox outlives the kills: settle until it answers (it sends the signed
                    # webhook; while the server is down the server's polling confirms instead).
                    for _ in range(600):
                        try:
                            s, _ = http("POST", f"{self.sandbox}/sandbox/charges/{reference}/succeed", {})
                            if s == 200:
                                with self.lock:
                                    self.settled.add(reference)
                                ok = True
                                break
                        except Down:
                            pass
                        time.sleep(0.05)
                    if not ok:
                        self.fail(f"the sandbox never settled {reference}")
                        ok = True  # the slot is spent: never a second payment for it
            except Down:
                with self.lock:
                    self.unknown += 1  # maybe initialized, never settled: abandoned after its hold
                time.sleep(0.05)
            if not ok:
                with self.lock:
                    self.reserved -= 1
                time.sleep(0.01)

    def killer(self, deadline):
        try:
            while not self.stop_killer.is_set() and time.time() < deadline:
                if self.stop_killer.wait(self.args.kill_every):
                    break
                self.server.send_signal(signal.SIGKILL)
                self.server.wait()
                self.kills += 1
                self.start_server()
        except BaseException as e:  # a server that cannot restart ends the run, not just this thread
            print(f"FAILED: restarting the server: {e}", file=sys.stderr, flush=True)
            os._exit(1)

    def progress(self, started):
        while not self.stop_killer.is_set():
            time.sleep(10)
            with self.lock:
                settled = len(self.settled)
            print(f"  {time.time() - started:6.0f}s: {settled} settled, {self.receiver.confirmed()} confirmed delivered, "
                  f"{self.kills} kills", file=sys.stderr, flush=True)

    # --- the audit -------------------------------------------------------------------------------

    def feed(self):
        items, after = [], 0
        while True:
            status, v = self.until_answered("GET", f"{V1}/events?after={after}&limit=100")
            if status != 200:
                raise SystemExit(f"GET /events: {status} {v}")
            page = v["data"]
            if not page:
                return items
            items += page
            after = page[-1]["sequence"]

    def audit(self):
        r = self.receiver
        target = self.args.payments
        with r.lock:
            first_ok = dict(r.first_ok)
            successes = dict(r.successes)
            unverified = list(r.unverified)
        if unverified:
            self.fail(f"{len(unverified)} requests did not verify, e.g. {unverified[:3]}")
        confirmed = {i: e for i, (_, e) in first_ok.items() if e.get("type") == "ticket.purchase.confirmed"}
        if len(confirmed) != target:
            self.fail(f"{len(confirmed)} distinct verified ticket.purchase.confirmed ids, not {target}")
        refs = {e["data"].get("reference") for e in confirmed.values()}
        if refs != self.settled:
            self.fail(f"confirmed references differ from the settled ones: {len(refs - self.settled)} unexpected, "
                      f"{len(self.settled - refs)} missing")
        doubles = {i: n - 1 for i, n in successes.items() if n > 1}
        second = sum(doubles.values())
        if second > self.kills:
            self.fail(f"{second} second successes for {self.kills} kills")
        feed = self.feed()
        seqs = [e["sequence"] for e in feed]
        if seqs != list(range(1, len(feed) + 1)):
            holes = sorted(set(range(1, (max(seqs) if seqs else 0) + 1)) - set(seqs))
            self.fail(f"the feed's sequences are not 1..N: {len(feed)} items, holes {holes[:10]}")
        received = sorted(e["sequence"] for _, e in first_ok.values())
        if received != list(range(1, len(received) + 1)):
            holes = sorted(set(range(1, (received[-1] if received else 0) + 1)) - set(received))
            self.fail(f"received sequences have holes: {holes[:10]} (of {len(received)})")
        by_id = {e["id"]: e for e in feed}
        if set(by_id) != set(first_ok):
            self.fail(f"feed and deliveries differ: {len(set(by_id) - set(first_ok))} never delivered, "
                      f"{len(set(first_ok) - set(by_id))} delivered but not in the feed")
        mismatched = [i for i, (_, e) in first_ok.items() if i in by_id and
                      (by_id[i]["sequence"], by_id[i]["type"], by_id[i]["timestamp"], by_id[i]["data"]) !=
                      (e["sequence"], e["type"], e["timestamp"], e["data"])]
        if mismatched:
            self.fail(f"{len(mismatched)} deliveries differ from their feed item, e.g. {mismatched[:3]}")
        feed_confirmed = sum(1 for e in feed if e["type"] == "ticket.purchase.confirmed")
        if feed_confirmed != target:
            self.fail(f"the feed has {feed_confirmed} ticket.purchase.confirmed events, not {target}")
        # Commit → delivery: the first verified 2xx against the event's own timestamp.
        lat = sorted(at - rfc3339_ms(e["timestamp"]) for at, e in first_ok.values())
        times = sorted(at for at, _ in first_ok.values())
        pct = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] if lat else None
        span = (times[-1] - times[0]) / 1000 if len(times) > 1 else 0
        return {
            "deliveries": {"distinct_events": len(first_ok), "confirmed": len(confirmed), "requests": r.requests,
                           "refused_first_attempts": r.refused, "second_successes": second,
                           "second_success_ids": sorted(doubles)},
            "feed_events": len(feed),
            "throughput_per_second": round(len(first_ok) / span, 1) if span else None,
            "commit_to_delivery_ms": {"p50": pct(0.50), "p99": pct(0.99), "max": lat[-1] if lat else None},
        }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--payments", type=int, default=10_000)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--kill-every", type=float, default=2.0)
    ap.add_argument("--first-fail", type=float, default=0.10)
    ap.add_argument("--retry-scale", type=float, default=0.001)
    ap.add_argument("--poll-ms", type=int, default=20)
    ap.add_argument("--lease-seconds", type=int, default=1)
    # A delivery claim's lease is max(workers.lease_seconds, webhooks.timeout_ms + 1 s): after a
    # kill the endpoint waits that long for its next sender. The receiver answers in
    # milliseconds, so a short timeout keeps that wait under the kill interval.
    ap.add_argument("--timeout-ms", type=int, default=500)
    ap.add_argument("--database-url", default="")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--deadline-seconds", type=int, default=1800, help="give up on the run after this long")
    ap.add_argument("--keep", action="store_true", help="keep the data dir (logs, database) afterwards")
    ap.add_argument("--settle-seconds", type=int, default=300, help="after the kills stop, how long deliveries get")
    args = ap.parse_args()
    if args.seed is None:
        args.seed = random.randrange(1 << 30)
    c = Chaos(args)
    started = time.time()
    try:
        c.setup()
        deadline = started + args.deadline_seconds
        killer = threading.Thread(target=c.killer, args=(deadline,), daemon=True)
        killer.start()
        threading.Thread(target=c.progress, args=(started,), daemon=True).start()
        buyers = [threading.Thread(target=c.buyer, args=(i,), daemon=True) for i in range(args.threads)]
        for t in buyers:
            t.start()
        for t in buyers:
            t.join(max(1, deadline - time.time()))
        paid_at = time.time()
        # The kills go on until every purchase is delivered once, verified (or the deadline).
        while time.time() < deadline and c.receiver.confirmed() < args.payments:
            time.sleep(0.2)
        c.stop_killer.set()
        killer.join(60)
        delivered_at = time.time()
        settle_until = time.time() + args.settle_seconds
        while time.time() < settle_until and c.receiver.confirmed() < args.payments:
            time.sleep(0.5)
        time.sleep(2)  # let in-flight retries and duplicates land before counting
        report = c.audit()
        summary = {"database": "postgres" if args.database_url else "sqlite", "seed": args.seed,
                   "payments": args.payments, "settled": len(c.settled), "initialize_no_answer": c.unknown,
                   "initialize_statuses": c.statuses, "kills": c.kills,
                   "seconds": {"payments": round(paid_at - started), "delivered_under_kills": round(delivered_at - started),
                               "total": round(time.time() - started)},
                   **report, "violations": c.violations}
        print(json.dumps(summary, sort_keys=True))
        d = report["deliveries"]
        print(f"verified ticket.purchase.confirmed ids: {d['confirmed']} of {args.payments}; kills: {c.kills}; "
              f"second successes: {d['second_successes']} {d['second_success_ids']}")
        print(f"delivery throughput: {report['throughput_per_second']} events/s; commit→delivery ms: "
              f"{report['commit_to_delivery_ms']}")
        if c.violations:
            print(f"VIOLATIONS: {c.violations}\nserver log: {c.data}/server.log", file=sys.stderr)
            sys.exit(1)
    finally:
        c.stop_killer.set()
        c.teardown()
        if c.violations or args.keep:
            print(f"data dir kept: {c.data}", file=sys.stderr)
        else:
            shutil.rmtree(c.data, ignore_errors=True)


if __name__ == "__main__":
    main()
