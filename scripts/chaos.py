"""Chaos driver for scripts/chaos.sh (issue 13, part 3). Python standard library only.

Starts the sandbox (its own process, so it outlives the kills) and a real `tessera serve`, drives
mixed load from a few threads (campaign writes, paid and free purchases through the sandbox,
settlement by its control API and the webhooks it sends, replayed webhooks, check-ins,
withdrawals and their transfers, refunds (whole, by ticket code, settled or failed at the sandbox)
and campaign cancellations with and without refunds) while a killer thread SIGKILLs the server at random moments and
starts it again, `kills` times. Every answer the driver got is recorded: an acknowledged write is
one answered 2xx; a request whose answer never came is "unknown" and never retried blindly
(except withdrawals and refunds, which carry an idempotency key and are retried with the same key,
and cancellations, which D17.38 makes safe to repeat).

Afterwards (server up, workers running): every acknowledged write is present, nothing was
applied twice, every payment and withdrawal is in a final or resumable state, then, after every
outstanding charge and transfer is settled and the workers have run, in a final state; tickets
issued = quantities paid; refunds (issue 26): every acknowledged refund exists, one per
idempotency key, none over what was paid, the sandbox's refunds match Tessera's one for one (id,
amount, charge, final state), no ticket is both checked in and refunded, every paid purchase of a
campaign cancelled with refunds has its refund; `tessera admin ledger check` is clean (it covers
refunds). Prints one JSON summary line
and exits non-zero on any violation.

    python3 scripts/chaos.py --bin target/debug/tessera --kills 30 [--database-url URL]

The reseller portal is in the mix: the account is a reseller whose owner (session minted by
`tessera admin session create`) invites members, revokes invitations, files approval requests for
them and cancels its own requests, all over HTTP through the kills. Afterwards every acknowledged
invitation exists exactly once, every acknowledged revocation and cancellation holds, every
acknowledged request exists, and no request is in a state nobody asked for. (Approving needs a
second active member, who would have to sign in through the passcode mail; not driven here.)
More portal operations: append a function `op(driver)` to PORTAL_OPS (it gets a weight like the
others) and its check to `Driver.check_portal`.

Cluster mode (issue 23), `--cluster N` with `--database-url`: instead of one server, N instances
behind HAProxy started by scripts/cluster.sh (its own Redis, REDIS_URL and one master key for all,
deploy/haproxy.cfg, deploy/tessera.toml merged with the chaos settings below). The driver, the
sandbox's webhooks and the audit go through HAProxy's front; the killer SIGKILLs one instance at a
time (round robin) and starts it again while the others serve. HAProxy's own 502/503/504 (an
instance died with the request, or none was reachable) count as no answer, like a cut connection.

    python3 scripts/chaos.py --bin target/debug/tessera --kills 10 --cluster 3 --database-url URL
"""

import argparse
import hashlib
import hmac
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
import tomllib
import urllib.error
import urllib.request
import uuid

V1 = "/api/white-label/v1"
# The reason chaos cancels campaigns with; the refunds a cancellation files carry it.
CANCEL_REASON = "chaos cancellation"
PROVIDERS = ["provider_a", "provider_b", "provider_c"]
SCOPES = ("settings:read,settings:write,campaigns:read,campaigns:write,tickets:read,tickets:write,"
          "payments:write,withdrawals:write,my-tickets:read,submissions:write,notifications:write")
PORTAL = "/api/white-label/portal"
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLUSTER_SH = os.path.join(REPO, "scripts", "cluster.sh")
DEPLOY_CONFIG = os.path.join(REPO, "deploy", "tessera.toml")
OWNER_EMAIL = "owner@chaos.example.com"


def portal_invite(d):
    email = f"m{uuid.uuid4().hex[:12]}@chaos.example.com"
    with d.lock:
        d.invites[email] = {"id": None, "revoked": False}
    status, v = d.portal("POST", "/reseller/members", {"email": email, "memberType": "support", "roles": ["viewer"]})
    if status == 201:
        d.invites[email]["id"] = v["data"]["id"]
        d.count("portal_invited")
    else:
        d.count(f"portal_invite_{status}")


def portal_revoke(d):
    with d.lock:
        cands = [i for i in d.invites.values() if i["id"] and not i["revoked"]]
    if not cands:
        return
    inv = d.rng.choice(cands)
    status, _ = d.portal("PATCH", f"/reseller/members/{inv['id']}", {"status": "revoked"})
    if status == 200:
        inv["revoked"] = True
        d.count("portal_revoked")
    else:
        d.count(f"portal_revoke_{status}")


def portal_file(d):
    with d.lock:
        cands = [i["id"] for i in d.invites.values() if i["id"]]
    if not cands:
        return
    status, v = d.portal("POST", "/reseller/approval-requests",
                         {"entityType": "member", "reason": "chaos", "requestPayload": {"memberId": d.rng.choice(cands)}})
    if status == 201:
        with d.lock:
            d.approvals[v["data"]["id"]] = {"cancelled": False}
        d.count("portal_filed")
    else:
        d.count(f"portal_file_{status}")


def portal_cancel(d):
    with d.lock:
        cands = [(i, a) for i, a in d.approvals.items() if not a["cancelled"]]
    if not cands:
        return
    rid, a = d.rng.choice(cands)
    status, _ = d.portal("PATCH", f"/reseller/approval-requests/{rid}", {"status": "cancelled"})
    if status == 200:
        a["cancelled"] = True
        d.count("portal_cancelled")
    else:
        # 409: an earlier attempt whose answer was lost already cancelled it.
        d.count(f"portal_cancel_{status}")


# Reseller portal operations: functions op(driver) -> None, run like the other operations.
PORTAL_OPS = [portal_invite, portal_revoke, portal_file, portal_cancel]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def free_ports(n):
    """The first of n consecutive free ports (scripts/cluster.sh numbers its ports from one base).
    Below Linux's ephemeral range (32768 and up), where free_port() and every test server that
    binds port 0 get theirs, so none of them can take one of these before cluster.sh binds it."""
    rng = random.Random()
    for _ in range(200):
        base = rng.randrange(20000, 32700 - n)
        socks = []
        try:
            for p in range(base, base + n):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise SystemExit(f"no {n} consecutive free ports")


def merged(base, over):
    out = dict(base)
    for k, v in over.items():
        out[k] = merged(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def toml_lines(table, prefix=""):
    """TOML for the plain tables a Tessera config has (strings, numbers, booleans, subtables)."""
    lines, subs = [], []
    for k, v in table.items():
        if isinstance(v, dict):
            subs.append((k, v))
        elif isinstance(v, bool):
            lines.append(f"{k} = {'true' if v else 'false'}")
        elif isinstance(v, (int, float)):
            lines.append(f"{k} = {v}")
        else:
            lines.append(f"{k} = {json.dumps(str(v))}")
    for k, v in subs:
        name = f"{prefix}{k}"
        lines += ["", f"[{name}]"] + toml_lines(v, name + ".")
    return lines


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
            # Not Tessera's envelope: HAProxy's own 502/503/504 in cluster mode (the instance died
            # with the request, or none answered). No answer from Tessera, like a cut connection.
            if e.code in (502, 503, 504):
                raise Down(f"proxy {e.code}") from e
            return e.code, {"raw": raw.decode(errors="replace")}
    except (urllib.error.URLError, ConnectionError, socket.timeout, TimeoutError, OSError) as e:
        raise Down(str(e)) from e


class Driver:
    def __init__(self, args):
        self.args = args
        self.bin = args.bin
        self.rng = random.Random(args.seed)
        self.lock = threading.Lock()
        self.data = tempfile.mkdtemp(prefix="tessera-chaos-")
        self.instances = args.cluster
        self.env = dict(os.environ)
        if self.instances:
            # Front on base, instance i on base+i, stats and Redis after them (scripts/cluster.sh).
            self.port = free_ports(self.instances + 3)
            self.run_dir = os.path.join(self.data, "cluster")
            # The operator CLI here and every instance must share one master key.
            self.env["TESSERA_MASTER_KEY"] = os.urandom(32).hex()
            self.instance_kills = [0] * self.instances
        else:
            self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.sandbox_port = free_port()
        self.sandbox = f"http://127.0.0.1:{self.sandbox_port}"
        self.db_args = ["--data-dir", self.data] + (["--database-url", args.database_url] if args.database_url else [])
        self.server = None
        self.stop = threading.Event()
        self.kills = 0
        self.restarts = 0
        # What the driver was told.
        self.campaigns = {}        # id -> {"title", "paid_type", "free_type", "desc_acked", "desc_tried": set}
        self.payments = {}         # reference -> {"quantity", "kind", "provider", "settled": None|"succeed"|"fail"}
        self.tickets = {}          # code -> {"checked_in": bool}
        self.withdrawals = {}      # idempotency key -> {"id": None|str, "amount", "settled": bool}
        self.refunds = {}          # idempotency key -> {"id", "reference", "body", "answered", "settled"}
        self.cancels = {}          # campaign id -> {"refund": bool, "acked": bool}
        self.invites = {}          # e-mail -> {"id": None|str, "revoked": bool}  (portal)
        self.approvals = {}        # approval request id -> {"cancelled": bool}  (portal)
        self.counts = {}
        self.violations = []

    # --- processes -------------------------------------------------------------------------------

    def config_file(self):
        path = os.path.join(self.data, "chaos.toml")
        chaos = {
            "security": {"rate_limit_per_account": 0, "rate_limit_per_ip": 0, "auth_failure_limit": 0,
                         "allow_private_endpoints": True},
            "payments": {"hold_seconds": self.args.hold_seconds, "verify_interval_seconds": 0.5},
            "workers": {"poll_ms": 100, "lease_seconds": 2},
            "providers": {p: {"base_url": f"{self.sandbox}/{p}", "secret_key": f"sk_test_platform_{p}"}
                          for p in PROVIDERS},
            # Hubtel calls back to the server's own address (D18.45).
            "http": {"public_url": self.base},
        }
        # Each real wire's extras (D18.2–3): Flutterwave's webhook hash, Hubtel's ids and token.
        chaos["providers"]["provider_b"]["webhook_hash"] = "chaos-flutterwave-hash"
        chaos["providers"]["provider_c"].update({"api_id": "chaos-api-id", "pos_sales_id": "2017001",
                                                 "prepaid_deposit_id": "2017002",
                                                 "callback_token": "chaos-hubtel-token"})
        if self.instances:
            # The deployment's own file (docs/deployment.md), with the chaos settings on top.
            with open(DEPLOY_CONFIG, "rb") as f:
                chaos = merged(tomllib.load(f), chaos)
        with open(path, "w") as f:
            f.write("\n".join(toml_lines(chaos)) + "\n")
        return path

    def admin(self, *args):
        out = subprocess.run([self.bin, "admin", *self.db_args, *args, "--json"], capture_output=True, text=True,
                             env=self.env)
        if out.returncode != 0:
            raise SystemExit(f"admin {args}: {out.stderr}")
        return json.loads(out.stdout)

    def cluster(self, *args):
        out = subprocess.run(["bash", CLUSTER_SH, *args, "--run-dir", self.run_dir], capture_output=True, text=True,
                             env=self.env)
        if out.returncode != 0:
            raise SystemExit(f"cluster.sh {' '.join(args)}: {out.stderr}")

    def start_server(self):
        if self.instances:
            self.cluster("start", "--instances", str(self.instances), "--port", str(self.port), "--config", self.cfg,
                         "--database-url", self.args.database_url, "--bin", self.bin)
            self.cluster_up = True
            time.sleep(0.01)
            return
        log = open(os.path.join(self.data, "server.log"), "ab")
        self.server = subprocess.Popen(
            [self.bin, "serve", *self.db_args, "--config", self.cfg, "--listen", f"127.0.0.1:{self.port}"],
            stdout=log, stderr=log)
        for _ in range(300):
            try:
                if http("GET", self.base + "/readyz", timeout=1)[0] == 200:
                    # Signed timestamps must be later than the server's start (D2.6).
                    time.sleep(0.01)
                    return
            except Down:
                pass
            time.sleep(0.05)
        raise SystemExit("server did not become ready")

    def kill_server(self):
        self.server.send_signal(signal.SIGKILL)
        self.server.wait()

    def setup(self):
        self.cfg = self.config_file()
        self.admin("account", "create", "--slug", "chaos", "--name", "Chaos Events")
        self.admin("domain", "add", "--account", "chaos", "--hostname", "chaos.example.com", "--primary", "--verified")
        k = self.admin("key", "create", "--account", "chaos", "--kind", "private", "--scopes", SCOPES,
                       "--capability", "withdrawals")
        self.key_id, self.secret = k["keyId"], k["secret"]
        self.admin("reseller", "create", "--account", "chaos", "--owner-email", OWNER_EMAIL)
        self.session = self.admin("session", "create", "--email", OWNER_EMAIL)["token"]
        log = open(os.path.join(self.data, "sandbox.log"), "ab")
        self.sandbox_proc = subprocess.Popen(
            [self.bin, "sandbox", "--data-dir", self.data, "--listen", f"127.0.0.1:{self.sandbox_port}",
             "--notify-url", self.base, "--smtp-listen", f"127.0.0.1:{free_port()}"], stdout=log, stderr=log)
        self.start_server()
        status, v = self.portal_answered("PATCH", "/reseller/profile", {"status": "enabled"})
        if status != 200:
            raise SystemExit(f"enabling the reseller profile: {status} {v}")

    def teardown(self):
        if getattr(self, "cluster_up", False):
            subprocess.run(["bash", CLUSTER_SH, "stop", "--run-dir", self.run_dir], capture_output=True, env=self.env)
        for p in (self.server, getattr(self, "sandbox_proc", None)):
            if p and p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()

    # --- requests --------------------------------------------------------------------------------

    def signed(self, method, path, body=None, headers=None):
        raw = b"" if body is None else json.dumps(body).encode()
        ts = str(int(time.time() * 1000))
        canonical = f"{ts}.{method}.{path}.".encode() + (raw or b"{}")
        h = {
            "x-white-label-key-id": self.key_id,
            "x-white-label-timestamp": ts,
            "x-white-label-nonce": uuid.uuid4().hex,
            "x-white-label-signature": hmac.new(self.secret.encode(), canonical, hashlib.sha256).hexdigest(),
        }
        h.update(headers or {})
        return http(method, self.base + path, raw if body is not None else None, h)

    def portal(self, method, path, body=None):
        return http(method, self.base + PORTAL + path, body, {"authorization": f"Bearer {self.session}"})

    def portal_answered(self, method, path, body=None, tries=600):
        for _ in range(tries):
            try:
                return self.portal(method, path, body)
            except Down:
                time.sleep(0.05)
        raise SystemExit(f"portal {method} {path}: no answer")

    def until_answered(self, method, path, body=None, headers=None, tries=600):
        """For reads and idempotent writes: retry through kills until the server answers (401
        stale timestamps after a restart included)."""
        for _ in range(tries):
            try:
                status, v = self.signed(method, path, body, headers)
                if status == 401 and (v or {}).get("code") == "stale_timestamp":
                    time.sleep(0.05)
                    continue
                return status, v
            except Down:
                time.sleep(0.05)
        raise SystemExit(f"{method} {path}: no answer")

    def count(self, name):
        with self.lock:
            self.counts[name] = self.counts.get(name, 0) + 1

    def fail(self, msg):
        with self.lock:
            self.violations.append(msg)

    # --- operations ------------------------------------------------------------------------------

    def op_campaign(self):
        now = time.time()
        fmt = lambda t: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
        title = f"Chaos {uuid.uuid4().hex}"
        body = {"title": title, "description": "A campaign made under chaos.", "campaign_type": "ticketing",
                "start_date": fmt(now - 86400), "end_date": fmt(now + 30 * 86400), "status": "approved"}
        status, v = self.signed("POST", V1 + "/campaigns", body)
        if status != 201:
            return self.count(f"campaign_{status}")
        cid = v["data"]["id"]
        self.count("campaign_created")
        c = {"title": title, "paid_type": None, "free_type": None, "desc_acked": None, "desc_tried": [],
             "lock": threading.Lock()}
        with self.lock:
            self.campaigns[cid] = c
        for kind, price in (("paid_type", 5), ("free_type", 0)):
            tb = {"campaignId": cid, "name": f"{kind} seat", "price": price, "quantity_available": 100000,
                  "max_per_person": 10}
            status, v = self.signed("POST", V1 + "/ticket-types", tb)
            if status != 201:
                return self.count(f"ticket_type_{status}")
            c[kind] = v["data"]["id"]
            self.count("ticket_type_created")

    def op_patch(self):
        with self.lock:
            cands = list(self.campaigns.items())
        if not cands:
            return
        cid, c = self.rng.choice(cands)
        if not c["lock"].acquire(blocking=False):
            return
        try:
            desc = f"Described under chaos, version {uuid.uuid4().hex}"
            c["desc_tried"].append(desc)
            status, _ = self.signed("PATCH", f"{V1}/campaigns/{cid}", {"description": desc})
            if status == 200:
                c["desc_acked"] = desc
                c["desc_tried"] = [desc]
                self.count("campaign_patched")
            else:
                c["desc_tried"].pop()
        finally:
            c["lock"].release()

    def ready_campaign(self, kind):
        with self.lock:
            cands = [(cid, c) for cid, c in self.campaigns.items() if c[kind] and cid not in self.cancels]
        return self.rng.choice(cands) if cands else (None, None)

    def op_buy(self, kind):
        cid, c = self.ready_campaign(kind)
        if not cid:
            return
        q = self.rng.randint(1, 3)
        body = {"campaign_id": cid, "ticket_id": c[kind], "email": "buyer@example.com", "quantity": q,
                "full_name": "Ama Mensah", "callbackUrl": "https://chaos.example.com/thanks"}
        status, v = self.signed("POST", V1 + "/payments/initialize", body)
        if status != 200:
            return self.count(f"initialize_{status}")
        d = v["data"]
        with self.lock:
            self.payments[d["reference"]] = {"quantity": q, "kind": kind, "provider": d.get("provider"),
                                             "settled": None, "campaign": cid, "codes": []}
            for t in d.get("tickets") or []:
                self.tickets[t["ticketCode"]] = {"checked_in": False}
        self.count(f"purchase_{kind}")

    def op_settle(self):
        with self.lock:
            cands = [r for r, p in self.payments.items() if p["kind"] == "paid_type" and p["settled"] is None]
        if not cands:
            return
        ref = self.rng.choice(cands)
        outcome = "fail" if self.rng.random() < 0.15 else "succeed"
        # The sandbox's control API; it delivers the webhook to the server (which may be down:
        # then the verify worker confirms by polling).
        status, _ = http("POST", f"{self.sandbox}/sandbox/charges/{ref}/{outcome}", {})
        if status == 200:
            self.payments[ref]["settled"] = outcome
            self.count(f"charge_{outcome}")

    def op_route(self):
        """Routes the account's next purchases and payouts to one of the three wires (Paystack,
        Flutterwave, Hubtel: D18.2–3)."""
        prov = self.rng.choice(PROVIDERS)
        status, _ = self.signed("PATCH", V1 + "/settings/payments", {"config": {"defaultProvider": prov}})
        self.count(f"route_{prov}_{status}")

    def op_replay_webhook(self):
        with self.lock:
            cands = [(r, p) for r, p in self.payments.items() if p["settled"] == "succeed" and p["provider"]]
        if not cands:
            return
        ref, p = self.rng.choice(cands)
        prov = p["provider"]
        # A charge callback in the provider's own wire, signed with D6.1's HMAC (D18.45).
        data = {
            "provider_a": {"event": "charge.success", "data": {"id": f"replay_{ref}", "reference": ref,
                                                               "status": "success"}},
            "provider_b": {"event": "charge.completed", "data": {"id": f"replay_{ref}", "tx_ref": ref,
                                                                 "status": "successful"}},
            "provider_c": {"ResponseCode": "0000", "Status": "Success",
                           "Data": {"CheckoutId": "replay", "ClientReference": ref.replace("_", ""),
                                    "Status": "Success"}},
        }[prov]
        body = json.dumps(data).encode()
        digest = hashlib.sha512 if prov == "provider_a" else hashlib.sha256
        sig = hmac.new(f"sk_test_platform_{prov}".encode(), body, digest).hexdigest()
        status, _ = http("POST", f"{self.base}/api/white-label/webhooks/{prov}", body, {f"x-{prov}-signature": sig})
        self.count(f"webhook_replayed_{status}")

    def op_paid_tickets(self):
        """Learns the ticket codes of confirmed purchases (for check-ins)."""
        with self.lock:
            cands = [r for r, p in self.payments.items() if p["settled"] == "succeed" and not p.get("seen")]
        if not cands:
            return
        ref = self.rng.choice(cands)
        status, v = self.signed("GET", f"{V1}/payments/{ref}")
        if status == 200 and v["data"]["status"] == "success":
            with self.lock:
                self.payments[ref]["seen"] = True
                for t in v["data"].get("tickets") or []:
                    self.tickets.setdefault(t["ticketCode"], {"checked_in": False})
                    self.payments[ref]["codes"].append(t["ticketCode"])

    def op_checkin(self):
        with self.lock:
            cands = [code for code, t in self.tickets.items() if not t["checked_in"]]
        if not cands:
            return
        code = self.rng.choice(cands)
        status, v = self.signed("POST", V1 + "/tickets/verify", {"ticketCode": code, "autoVerify": True})
        # 200 answers every outcome; only these two mean the ticket is in (a refunded ticket
        # answers `void`, a cancelled campaign's `campaign_archived`).
        result = (v or {}).get("data", {}).get("result") if status == 200 else None
        if result in ("checked_in", "already_checked_in"):
            self.tickets[code]["checked_in"] = True
            self.count("checked_in")
        else:
            self.count(f"check_in_{result or status}")

    def op_withdraw(self, key=None):
        if key is None:
            key = uuid.uuid4().hex
            with self.lock:
                self.withdrawals[key] = {"id": None, "amount": 1, "settled": False, "answered": False}
        body = {"amount": 1, "bank_name": "MTN Mobile Money", "bank_code": "MTN", "account_number": "0241234567",
                "account_name": "Ama Mensah"}
        status, v = self.signed("POST", V1 + "/withdrawals", body, {"x-idempotency-key": key})
        w = self.withdrawals[key]
        w["answered"] = True
        if status == 201 or (status == 200 and v and v.get("data", {}).get("id")):
            wid = v["data"]["id"]
            if w["id"] and w["id"] != wid:
                self.fail(f"idempotency key {key} answered two withdrawals {w['id']} and {wid}")
            w["id"] = wid
            self.count("withdrawal_created")
        else:
            self.count(f"withdrawal_{status}")

    def op_withdraw_retry(self):
        with self.lock:
            cands = [k for k, w in self.withdrawals.items() if not w["answered"]]
        if cands:
            self.op_withdraw(self.rng.choice(cands))

    def op_settle_transfer(self):
        with self.lock:
            cands = [w for w in self.withdrawals.values() if w["id"] and not w["settled"]]
        if not cands:
            return
        w = self.rng.choice(cands)
        status, _ = http("POST", f"{self.sandbox}/sandbox/transfers/{w['id']}/succeed", {})
        if status == 200:
            w["settled"] = True
            self.count("transfer_succeed")

    def op_refund(self, key=None):
        """A refund of a confirmed purchase: the whole of it, or one of its tickets by code.
        Without an answer it stays unanswered, and op_refund_retry sends it again with its key."""
        if key is None:
            with self.lock:
                cands = [(r, p) for r, p in self.payments.items() if p.get("seen") and p["kind"] == "paid_type"]
            if not cands:
                return
            ref, p = self.rng.choice(cands)
            body = {"reason": "chaos"}
            if p["codes"] and self.rng.random() < 0.6:
                body["ticketCodes"] = [self.rng.choice(p["codes"])]
            key = uuid.uuid4().hex
            with self.lock:
                self.refunds[key] = {"id": None, "reference": ref, "body": body, "answered": False, "settled": False}
        r = self.refunds[key]
        status, v = self.signed("POST", f"{V1}/payments/{r['reference']}/refunds", r["body"],
                                {"x-idempotency-key": key})
        r["answered"] = True
        if status == 201:
            rid = v["data"]["id"]
            if r["id"] and r["id"] != rid:
                self.fail(f"idempotency key {key} answered two refunds {r['id']} and {rid}")
            r["id"] = rid
            self.count("refund_created")
        elif status == 409:
            # not_refundable, refund_exceeds_payment, ticket_not_refundable (checked in, or
            # already refunded), insufficient_balance: all expected under this mix.
            self.count(f"refund_409_{(v or {}).get('code')}")
        else:
            self.count(f"refund_{status}")

    def op_refund_retry(self):
        with self.lock:
            cands = [k for k, r in self.refunds.items() if not r["answered"]]
        if cands:
            self.op_refund(self.rng.choice(cands))

    def op_settle_refund(self):
        with self.lock:
            cands = [r for r in self.refunds.values() if r["id"] and not r["settled"]]
        if not cands:
            return
        r = self.rng.choice(cands)
        outcome = "fail" if self.rng.random() < 0.2 else "succeed"
        # 404 until the refund worker has filed it at the provider.
        status, _ = http("POST", f"{self.sandbox}/sandbox/refunds/{r['id']}/{outcome}", {})
        if status == 404:
            # Flutterwave's wire carries no id of Tessera's: settle a pending refund of this
            # payment there by its own id.
            pid = self.flutterwave_pending(r["reference"])
            if pid:
                status, _ = http("POST", f"{self.sandbox}/sandbox/refunds/{pid}/{outcome}", {})
        if status == 200:
            r["settled"] = True
            self.count(f"refund_{outcome}")
        else:
            self.count(f"refund_settle_{status}")

    def flutterwave_pending(self, reference=None):
        """The sandbox ids of pending Flutterwave refunds (of one payment, or all): the first,
        or the list when no payment is named."""
        status, v = http("GET", f"{self.sandbox}/sandbox/refunds")
        rows = [r for r in (v if isinstance(v, list) else []) if r.get("provider") == "provider_b"
                and r.get("status") == "pending" and (reference is None or r.get("transaction") == reference)]
        ids = [str(r["providerId"]) for r in rows]
        return ids if reference is None else (ids[0] if ids else None)

    def op_cancel(self, cid=None):
        """Cancels a campaign, with refunds two times in three; a cancel without an answer is sent
        again as it was (D17.38: cancelling again answers the same)."""
        if cid is None:
            with self.lock:
                cands = [c for c in self.campaigns if c not in self.cancels]
                if len(cands) < 3:
                    return  # keep campaigns to buy from
                cid = self.rng.choice(cands)
                paid = [r for r, p in self.payments.items() if p.get("campaign") == cid and p.get("seen")]
                self.cancels[cid] = {"refund": self.rng.random() < 0.67, "acked": False, "paid_before": paid}
        c = self.cancels[cid]
        status, v = self.signed("POST", f"{V1}/campaigns/{cid}/cancel", {"reason": CANCEL_REASON, "refund": c["refund"]})
        if status == 202:
            c["acked"] = True
            if (v or {}).get("data", {}).get("status") != "archived":
                self.fail(f"cancel of {cid} answered {v}")
            self.count("campaign_cancelled")
        else:
            self.count(f"cancel_{status}")

    def op_cancel_retry(self):
        with self.lock:
            cands = [cid for cid, c in self.cancels.items() if not c["acked"]]
        if cands:
            self.op_cancel(self.rng.choice(cands))

    def operations(self):
        ops = [
            (6, self.op_campaign), (6, self.op_patch), (25, lambda: self.op_buy("paid_type")),
            (10, lambda: self.op_buy("free_type")), (20, self.op_settle), (5, self.op_replay_webhook),
            (6, self.op_paid_tickets), (12, self.op_checkin), (4, self.op_withdraw), (3, self.op_withdraw_retry),
            (4, self.op_settle_transfer), (5, self.op_refund), (2, self.op_refund_retry), (5, self.op_settle_refund),
            (1, self.op_cancel), (1, self.op_cancel_retry), (2, self.op_route),
        ]
        ops += [(5, lambda op=op: op(self)) for op in PORTAL_OPS]
        return ops

    def worker(self, seed):
        rng = random.Random(seed)
        ops = self.operations()
        weights = [w for w, _ in ops]
        while not self.stop.is_set():
            _, op = rng.choices(ops, weights)[0]
            try:
                op()
            except Down:
                self.count("no_answer")
                time.sleep(0.02)
            except Exception as e:  # noqa: BLE001 - a driver bug must not pass silently
                self.fail(f"driver error in {op}: {e!r}")
                time.sleep(0.1)

    def killer(self):
        for n in range(self.args.kills):
            time.sleep(self.rng.uniform(0.3, 2.5))
            if self.instances:
                # One instance at a time, in turn; the others keep serving behind HAProxy.
                i = n % self.instances + 1
                self.cluster("kill", str(i))
                self.instance_kills[i - 1] += 1
            else:
                self.kill_server()
            self.kills += 1
            time.sleep(self.rng.uniform(0.0, 0.3))
            if self.instances:
                self.cluster("start-instance", str(i))
                time.sleep(0.01)
            else:
                self.start_server()
            self.restarts += 1
        time.sleep(1.0)
        self.stop.set()

    def haproxy_counts(self):
        """Requests per instance as HAProxy's access log tells (so the run shows the load was
        spread), the 502/503/504 answers (502 is HAProxy's for a request whose instance died with
        it; Tessera never answers 502), and the requests HAProxy sent again because their first
        connection failed (the only retry it makes)."""
        counts = {}
        try:
            with open(os.path.join(self.run_dir, "haproxy.log")) as f:
                for line in f:
                    parts = line.split()
                    if len(parts) > 5 and parts[2] == "tessera_front":
                        server = parts[3].split("/")[-1]
                        counts[server] = counts.get(server, 0) + 1
                        if parts[5] in ("502", "503", "504"):
                            counts[f"status_{parts[5]}"] = counts.get(f"status_{parts[5]}", 0) + 1
                        # actconn/feconn/beconn/srv_conn/retries; "+" when sent to another
                        # instance after its first could not be reached.
                        if len(parts) > 10 and parts[10].split("/")[-1] not in ("0", ""):
                            counts["retried"] = counts.get("retried", 0) + 1
        except OSError:
            pass
        return counts

    # --- the audit -------------------------------------------------------------------------------

    def all_pages(self, path):
        rows, page = [], 1
        while True:
            sep = "&" if "?" in path else "?"
            status, v = self.until_answered("GET", f"{path}{sep}page={page}&limit=100")
            if status != 200:
                raise SystemExit(f"GET {path}: {status} {v}")
            rows += v["data"]
            if len(v["data"]) < 100:
                return rows
            page += 1

    def check(self):
        checks = 0
        # Every acknowledged write is present.
        for cid, c in self.campaigns.items():
            status, v = self.until_answered("GET", f"{V1}/campaigns/{cid}")
            checks += 1
            if status != 200:
                self.fail(f"acknowledged campaign {cid} is gone: {status}")
                continue
            d = v["data"]
            if c["desc_acked"] and d["description"] not in c["desc_tried"]:
                self.fail(f"campaign {cid}: description {d['description']!r} is not the acknowledged one")
        titles = {}
        for row in self.all_pages(V1 + "/campaigns"):
            titles[row["title"]] = titles.get(row["title"], 0) + 1
        doubled = [t for t, n in titles.items() if n > 1]
        checks += 1
        if doubled:
            self.fail(f"campaigns created twice: {doubled}")
        server_payments = {p["reference"]: p for p in self.all_pages(V1 + "/payments")}
        for ref in self.payments:
            checks += 1
            if ref not in server_payments:
                self.fail(f"acknowledged payment {ref} is gone")
        resumable = {"pending", "success", "failed", "abandoned"}
        for ref, p in server_payments.items():
            checks += 1
            if p["status"] not in resumable:
                self.fail(f"payment {ref} in state {p['status']}")
        server_withdrawals = {w["id"]: w for w in self.all_pages(V1 + "/withdrawals")}
        acked = {w["id"] for w in self.withdrawals.values() if w["id"]}
        for wid in acked:
            checks += 1
            if wid not in server_withdrawals:
                self.fail(f"acknowledged withdrawal {wid} is gone")
        checks += 1
        if len(server_withdrawals) > len(self.withdrawals):
            self.fail(f"{len(server_withdrawals)} withdrawals for {len(self.withdrawals)} idempotency keys")
        for key, r in self.refunds.items():
            if r["id"]:
                checks += 1
                status, v = self.until_answered("GET", f"{V1}/refunds/{r['id']}")
                if status != 200:
                    self.fail(f"acknowledged refund {r['id']} is gone: {status}")
                elif v["data"]["reference"] != r["reference"]:
                    self.fail(f"refund {r['id']} names {v['data']['reference']}, not {r['reference']}")
        # Acknowledged cancellations hold (retries included, so until answered).
        for cid, c in self.cancels.items():
            if not c["acked"]:
                self.op_cancel_until_answered(cid)
        for cid, c in self.cancels.items():
            checks += 1
            status, v = self.until_answered("GET", f"{V1}/campaigns/{cid}")
            if status != 200 or v["data"]["status"] != "archived":
                self.fail(f"cancelled campaign {cid} is not archived: {status} {v}")
        for code, t in self.tickets.items():
            if t["checked_in"]:
                checks += 1
                status, v = self.until_answered("POST", V1 + "/tickets/verify", {"ticketCode": code})
                if status != 200 or v["data"].get("checkedIn") is not True:
                    self.fail(f"acknowledged check-in of {code} is gone: {status} {v}")

        # Settle everything outstanding and let the workers run: everything ends final.
        for ref, p in server_payments.items():
            if p["status"] == "pending" and p["amount"] != 0:
                http("POST", f"{self.sandbox}/sandbox/charges/{ref}/succeed", {})
        deadline = time.time() + self.args.settle_seconds
        while True:
            for wid, w in list(server_withdrawals.items()):
                if w["status"] in ("pending", "processing"):
                    http("POST", f"{self.sandbox}/sandbox/transfers/{wid}/succeed", {})
            server_payments = {p["reference"]: p for p in self.all_pages(V1 + "/payments")}
            server_withdrawals = {w["id"]: w for w in self.all_pages(V1 + "/withdrawals")}
            server_refunds = self.server_refunds(server_payments)
            for rid, r in server_refunds.items():
                if r["status"] == "pending":
                    # 404 while the worker has yet to file it; the next round settles it.
                    http("POST", f"{self.sandbox}/sandbox/refunds/{rid}/succeed", {})
            for pid in self.flutterwave_pending():
                http("POST", f"{self.sandbox}/sandbox/refunds/{pid}/succeed", {})
            open_p = [r for r, p in server_payments.items() if p["status"] == "pending"]
            open_w = [i for i, w in server_withdrawals.items() if w["status"] in ("pending", "processing")]
            open_r = [i for i, r in server_refunds.items() if r["status"] == "pending"]
            if not open_p and not open_w and not open_r:
                break
            if time.time() > deadline:
                self.fail(f"not final after {self.args.settle_seconds}s: payments {open_p[:5]}, "
                          f"withdrawals {open_w[:5]}, refunds {open_r[:5]}")
                break
            time.sleep(1)
        tickets_total = 0
        for ref, p in server_payments.items():
            checks += 1
            status, v = self.until_answered("GET", f"{V1}/payments/{ref}")
            d = v["data"]
            n = len(d.get("tickets") or [])
            if d["status"] == "success":
                tickets_total += n
                if n != d["quantity"]:
                    self.fail(f"payment {ref}: {n} tickets for quantity {d['quantity']}")
            elif n:
                self.fail(f"payment {ref} is {d['status']} but issued {n} tickets")
            mine = self.payments.get(ref)
            if mine and mine["settled"] == "succeed" and d["status"] != "success":
                self.fail(f"payment {ref} was paid but is {d['status']}")
        for wid in acked:
            checks += 1
            w = server_withdrawals.get(wid)
            if not w or w["status"] not in ("completed", "failed"):
                self.fail(f"withdrawal {wid} not final: {w}")
        checks += self.check_refunds(server_payments)
        checks += self.check_portal()
        if self.instances:
            checks += self.check_no_instance_ready()
        out = subprocess.run([self.bin, "admin", *self.db_args, "ledger", "check", "--json"],
                             capture_output=True, text=True, env=self.env)
        checks += 1
        report = json.loads(out.stdout or "null")
        if out.returncode != 0 or not report or report.get("ok") is not True:
            self.fail(f"ledger check: exit {out.returncode}: {out.stdout} {out.stderr}")
        return checks, tickets_total, len(server_payments), len(server_withdrawals)

    def op_cancel_until_answered(self, cid):
        c = self.cancels[cid]
        status, v = self.until_answered("POST", f"{V1}/campaigns/{cid}/cancel", {"reason": CANCEL_REASON, "refund": c["refund"]})
        if status != 202:
            self.fail(f"cancel of {cid} retried after the run: {status} {v}")
        c["acked"] = True

    def server_refunds(self, server_payments):
        """Every refund Tessera holds, by id (read per payment: GET /payments/:reference/refunds)."""
        out = {}
        for ref, p in server_payments.items():
            if p["status"] != "success":
                continue
            for r in self.all_pages(f"{V1}/payments/{ref}/refunds"):
                out[r["id"]] = r
        self.last_refunds = out
        return out

    def by_tessera_id(self, theirs, mine, server_payments, unsent):
        """The sandbox's refunds by Tessera's refund id. Flutterwave's wire carries no id of
        Tessera's (D18.2): its refunds are matched one for one by payment and amount, in order."""
        out = {r["id"]: r for r in theirs if r.get("provider") != "provider_b"}
        pool = {}
        for r in sorted((r for r in theirs if r.get("provider") == "provider_b"), key=lambda r: r["createdAt"]):
            pool.setdefault((r["transaction"], r["amount"]), []).append(r)
        for rid, r in sorted(mine.items(), key=lambda kv: kv[1].get("createdAt") or ""):
            if rid in unsent or (server_payments.get(r["reference"]) or {}).get("provider") != "provider_b":
                continue
            found = pool.get((r["reference"], round(float(r["amount"]) * 100))) or []
            if found:
                out[rid] = found.pop(0)
        for rest in pool.values():
            for r in rest:
                out[r["id"]] = r
        return out

    def check_refunds(self, server_payments):
        """Issue 26's acceptance: the sandbox's refunds match Tessera's one for one, nothing over
        what was paid, no ticket both admitted and refunded, cancellations filed their refunds."""
        checks = 0
        mine = self.server_refunds(server_payments)
        acked_keys = sum(1 for r in self.refunds.values() if r["id"])
        status, v = http("GET", f"{self.sandbox}/sandbox/refunds")
        theirs = v if isinstance(v, list) else (v or {}).get("data") or []
        # A cancellation's refund the balance did not cover is recorded failed and never sent to
        # the provider (D17.37), as is one Hubtel cannot make (a card payment, no known payer:
        # D18.3): it is Tessera's alone. Every other refund is at the sandbox.
        unsent = {rid for rid, r in mine.items() if r["status"] == "failed"
                  and (r.get("failureReason") or "").startswith(("the available balance", "Hubtel refunds"))}
        theirs = self.by_tessera_id(theirs, mine, server_payments, unsent)
        checks += 1
        if len(theirs) != len(mine) - len(unsent):
            self.fail(f"{len(theirs)} refunds at the sandbox for {len(mine)} in Tessera ({len(unsent)} never sent)")
        ok_states = {"succeeded": ("success", "succeeded", "processed"), "failed": ("failed",)}
        for rid, r in mine.items():
            checks += 1
            s = theirs.get(rid)
            if rid in unsent:
                if s:
                    self.fail(f"refund {rid} was refused for the balance but is at the sandbox")
                continue
            if not s:
                self.fail(f"refund {rid} ({r['status']}) is not at the sandbox")
                continue
            if s.get("amount") != round(float(r["amount"]) * 100):
                self.fail(f"refund {rid}: {r['amount']} GHS in Tessera, {s.get('amount')} pesewas at the sandbox")
            if s.get("transaction") != r["reference"]:
                self.fail(f"refund {rid}: charge {r['reference']} in Tessera, {s.get('transaction')} at the sandbox")
            if s.get("status") not in ok_states.get(r["status"], ()):
                self.fail(f"refund {rid}: {r['status']} in Tessera, {s.get('status')} at the sandbox")
        for rid in theirs:
            if rid not in mine:
                self.fail(f"sandbox refund {rid} is unknown to Tessera")
        # One refund per idempotency key: at most as many as keys plus what cancellations filed.
        by_ref = {}
        for r in mine.values():
            by_ref.setdefault(r["reference"], []).append(r)
        cancelled = {cid for cid, c in self.cancels.items() if c["refund"]}
        # Purchases seen paid before their campaign's cancel was sent: each must have a refund.
        cancel_paid = [ref for cid in cancelled for ref in self.cancels[cid]["paid_before"]]
        # A cancellation files one refund of every successful payment of the campaign when its job
        # runs (D17.37), so also of payments confirmed after the cancel was sent; its refunds carry
        # the cancel's reason. The rest came through the refund route: one per idempotency key.
        filed = [r for r in mine.values() if r.get("reason") == CANCEL_REASON]
        checks += 1
        if len(mine) - len(filed) > len(self.refunds):
            self.fail(f"{len(mine) - len(filed)} refunds through the route for {len(self.refunds)} keys")
        per_payment = {}
        for r in filed:
            per_payment[r["reference"]] = per_payment.get(r["reference"], 0) + 1
        for ref, n in per_payment.items():
            checks += 1
            if n > 1:
                self.fail(f"payment {ref}: {n} cancellation refunds")
            campaign = (server_payments.get(ref) or {}).get("campaignId") or self.payments.get(ref, {}).get("campaign")
            if campaign and campaign not in cancelled:
                self.fail(f"payment {ref}: a cancellation refund, but campaign {campaign} was not cancelled with refunds")
        for ref, rs in by_ref.items():
            checks += 1
            status, v = self.until_answered("GET", f"{V1}/payments/{ref}")
            d = v["data"]
            held = sum(float(r["amount"]) for r in rs if r["status"] in ("pending", "succeeded"))
            done = sum(float(r["amount"]) for r in rs if r["status"] == "succeeded")
            if held > float(d["amount"]) + 1e-9:
                self.fail(f"payment {ref}: {held} GHS refunded of {d['amount']} paid")
            if abs(float(d.get("refunded", -1)) - done) > 1e-9:
                self.fail(f"payment {ref}: refunded {d.get('refunded')}, succeeded refunds sum {done}")
            voided = {c for r in rs if r["status"] == "succeeded" for c in (r.get("ticketCodes") or [])}
            for t in d.get("tickets") or []:
                if t["ticketCode"] in voided and t["status"] != "void":
                    self.fail(f"ticket {t['ticketCode']} refunded but {t['status']}")
                if t["ticketCode"] in voided and self.tickets.get(t["ticketCode"], {}).get("checked_in"):
                    self.fail(f"ticket {t['ticketCode']} both checked in and refunded")
        # Every paid purchase of a campaign cancelled with refunds has a refund filed.
        for ref in cancel_paid:
            checks += 1
            if not by_ref.get(ref):
                self.fail(f"payment {ref} of a campaign cancelled with refunds has no refund")
        for cid in cancelled:
            checks += 1
            status, v = self.until_answered("GET", f"{V1}/campaigns/{cid}")
            counts = (v or {}).get("data", {}).get("refunds") or {}
            n = sum(len(rs) for ref, rs in by_ref.items() if self.payments.get(ref, {}).get("campaign") == cid)
            req = counts.get("requested", -1)
            if not 0 <= req <= n or counts.get("succeeded", 0) + counts.get("failed", 0) > req:
                self.fail(f"campaign {cid}: refunds {counts} but {n} refunds of its purchases")
        by_provider = {}
        for ref, p in server_payments.items():
            k = by_provider.setdefault(p.get("provider") or "none", {"payments": 0, "paid": 0, "refunds": 0})
            k["payments"] += 1
            k["paid"] += p["status"] == "success"
        for r in mine.values():
            prov = (server_payments.get(r["reference"]) or {}).get("provider") or "none"
            by_provider.setdefault(prov, {"payments": 0, "paid": 0, "refunds": 0})["refunds"] += 1
        self.refund_summary = {"by_provider": by_provider,
                               "tessera": len(mine), "sandbox": len(theirs), "acknowledged": acked_keys,
                               "succeeded": sum(1 for r in mine.values() if r["status"] == "succeeded"),
                               "failed": sum(1 for r in mine.values() if r["status"] == "failed"),
                               "cancellations": len(self.cancels), "refused_for_balance": len(unsent),
                               "filed_by_cancellations": len(filed), "seen_paid_before_cancel": len(cancel_paid)}
        return checks

    def haproxy_command(self, line):
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(os.path.join(self.run_dir, "haproxy.sock"))
            s.sendall(line.encode() + b"\n")
            return s.recv(4096).decode()

    def check_no_instance_ready(self):
        """With no instance ready (every /readyz 503, as when Redis is down, D17.2), HAProxy
        still hands requests to the live instances (deploy/haproxy.cfg's tessera_live), so
        Tessera answers instead of HAProxy's bare 503. Simulated by putting every server of the
        ready backend in maintenance through HAProxy's admin socket."""
        names = [f"tessera{i}" for i in range(1, self.instances + 1)]
        try:
            for n in names:
                self.haproxy_command(f"set server tessera/{n} state maint")
            try:
                status, v = self.signed("GET", V1 + "/campaigns?limit=1")
            except Down as e:
                status, v = None, str(e)
            if status != 200:
                self.fail(f"no instance ready: a signed read through HAProxy answered {status} {v}")
        finally:
            for n in names:
                self.haproxy_command(f"set server tessera/{n} state ready")
        return 1

    def check_portal(self):
        """Every acknowledged portal change holds, and nothing happened that nobody asked for."""
        checks = 0
        status, v = self.portal_answered("GET", "/reseller")
        if status != 200:
            self.fail(f"portal console: {status} {v}")
            return checks
        everyone = v["data"]["members"] + v["data"]["invitations"]
        by_email = {}
        for m in everyone:
            by_email.setdefault(m.get("email"), []).append(m)
        for email, inv in self.invites.items():
            found = by_email.get(email, [])
            checks += 1
            if len(found) > 1:
                self.fail(f"invitation {email} exists {len(found)} times")
            if inv["id"] and not found:
                self.fail(f"acknowledged invitation {email} is gone")
            if inv["revoked"] and found and found[0]["status"] != "revoked":
                self.fail(f"acknowledged revocation of {email} is gone: {found[0]['status']}")
        status, v = self.portal_answered("GET", "/reseller/approval-requests")
        if status != 200:
            self.fail(f"portal approval list: {status} {v}")
            return checks
        server = {a["id"]: a for a in v["data"]}
        for rid, a in self.approvals.items():
            checks += 1
            got = server.get(rid)
            if not got:
                self.fail(f"acknowledged approval request {rid} is gone")
            elif a["cancelled"] and got["status"] != "cancelled":
                self.fail(f"acknowledged cancellation of {rid} is gone: {got['status']}")
        for rid, got in server.items():
            checks += 1
            if got["status"] not in ("pending", "cancelled"):
                self.fail(f"approval request {rid} is {got['status']}, which nobody asked for")
        return checks


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--kills", type=int, default=30)
    ap.add_argument("--database-url", default="")
    ap.add_argument("--threads", type=int, default=3)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--hold-seconds", type=int, default=60, help="payment hold (orphans end abandoned after it)")
    ap.add_argument("--settle-seconds", type=int, default=150, help="how long the workers get to end everything")
    ap.add_argument("--cluster", type=int, default=0, metavar="N",
                    help="N instances behind HAProxy (scripts/cluster.sh) instead of one server; needs --database-url")
    args = ap.parse_args()
    if args.cluster and not args.database_url:
        ap.error("--cluster needs --database-url (several instances share one PostgreSQL database)")
    if args.seed is None:
        args.seed = random.randrange(1 << 30)
    d = Driver(args)
    started = time.time()
    try:
        d.setup()
        threads = [threading.Thread(target=d.worker, args=(args.seed + i,), daemon=True) for i in range(args.threads)]
        for t in threads:
            t.start()
        d.killer()
        for t in threads:
            t.join(30)
        checks, tickets, payments, withdrawals = d.check()
        summary = {
            "database": "postgres" if args.database_url else "sqlite", "seed": args.seed, "kills": d.kills,
            "restarts": d.restarts, "seconds": round(time.time() - started), "operations": d.counts,
            "acknowledged": {"campaigns": len(d.campaigns), "payments": len(d.payments),
                             "check_ins": sum(1 for t in d.tickets.values() if t["checked_in"]),
                             "withdrawals": sum(1 for w in d.withdrawals.values() if w["id"]),
                             "portal_invitations": sum(1 for i in d.invites.values() if i["id"]),
                             "portal_approval_requests": len(d.approvals)},
            "server_payments": payments, "server_withdrawals": withdrawals, "tickets_issued": tickets,
            "refunds": getattr(d, "refund_summary", {}),
            "invariants_checked": checks, "violations": d.violations,
        }
        if d.instances:
            summary["cluster"] = {"instances": d.instances, "kills_per_instance": d.instance_kills,
                                  "haproxy": d.haproxy_counts()}
        print(json.dumps(summary, sort_keys=True))
        if d.violations:
            where = f"{d.run_dir}/inst*.log, haproxy.log" if d.instances else f"{d.data}/server.log"
            print(f"server log: {where}", file=sys.stderr)
            sys.exit(1)
    finally:
        d.teardown()
        if not d.violations:
            shutil.rmtree(d.data, ignore_errors=True)


if __name__ == "__main__":
    main()
