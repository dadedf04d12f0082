"""Schemathesis hooks for scripts/fuzz-api.sh: authenticate every generated request the way a
real integrator would, so that the fuzzer reaches the handlers instead of stopping at 401.

- Operations whose only scheme is `domainKey` get `x-white-label-domain` and `x-white-label-key`.
- Every other version 1 operation is signed (docs/signing.md): HMAC-SHA256 with the private key
  secret over `<timestamp>.<METHOD>.<path with query>.<body bytes, or {} when empty>`, computed
  on the prepared request, i.e. over the exact bytes and target that go on the wire.
- `GET /campaigns` takes both forms: each request picks one at random.

Configuration comes from the environment that fuzz-api.sh sets: TESSERA_FUZZ_KEY_ID,
TESSERA_FUZZ_KEY_SECRET, TESSERA_FUZZ_PUBLIC_KEY (`<keyId>:<secret>`), TESSERA_FUZZ_DOMAIN.
"""

import hashlib
import hmac
import os
import random
import time
import uuid

import requests
import schemathesis

KEY_ID = os.environ.get("TESSERA_FUZZ_KEY_ID", "")
SECRET = os.environ.get("TESSERA_FUZZ_KEY_SECRET", "")
PUBLIC_KEY = os.environ.get("TESSERA_FUZZ_PUBLIC_KEY", "")
DOMAIN = os.environ.get("TESSERA_FUZZ_DOMAIN", "")
# Campaigns the seed made: most generated campaign ids are swapped for one of them, so that the
# fuzzer gets past 404 into the handlers' rules (409s, 201s).
CAMPAIGNS = [c for c in os.environ.get("TESSERA_FUZZ_CAMPAIGNS", "").split(",") if c]
# Its own generator: Hypothesis warns about the global `random` inside test execution.
RNG = random.Random()


def sign(secret: str, timestamp: str, method: str, path: str, body: bytes) -> str:
    canonical = f"{timestamp}.{method.upper()}.{path}.".encode() + (body or b"{}")
    return hmac.new(secret.encode(), canonical, hashlib.sha256).hexdigest()


class Signed(requests.auth.AuthBase):
    """Signs the prepared request (its final body bytes and request target)."""

    def __call__(self, r: requests.PreparedRequest) -> requests.PreparedRequest:
        body = r.body or b""
        if isinstance(body, str):
            body = body.encode()
        ts = str(int(time.time() * 1000))
        r.headers["x-white-label-key-id"] = KEY_ID
        r.headers["x-white-label-timestamp"] = ts
        r.headers["x-white-label-nonce"] = uuid.uuid4().hex
        r.headers["x-white-label-signature"] = sign(SECRET, ts, r.method, r.path_url, body)
        r.headers.pop("x-white-label-key", None)
        return r


class DomainKey(requests.auth.AuthBase):
    def __call__(self, r: requests.PreparedRequest) -> requests.PreparedRequest:
        for h in ("x-white-label-key-id", "x-white-label-timestamp", "x-white-label-nonce", "x-white-label-signature"):
            r.headers.pop(h, None)
        r.headers["x-white-label-domain"] = DOMAIN
        r.headers["x-white-label-key"] = PUBLIC_KEY
        return r


class Bearer(requests.auth.AuthBase):
    """A portal session (`Authorization: Bearer <token>`)."""

    def __init__(self, token: str):
        self.token = token

    def __call__(self, r: requests.PreparedRequest) -> requests.PreparedRequest:
        r.headers["authorization"] = f"Bearer {self.token}"
        return r


# How each security scheme of the document is satisfied: scheme name -> a factory of
# `requests` auth objects, or None when the run has no credential for it (the operation is then
# sent without one, and its documented 401 is what is checked).
# The portal session comes from fuzz-api.sh (`tessera admin session create --email E --json`).
# Logout would end it for every later portal request, so logouts spend spare sessions of the
# same owner (TESSERA_FUZZ_PORTAL_SPARE_TOKENS, comma-separated) and, once those are gone, an
# unknown token (the documented 401).
PORTAL_TOKEN = os.environ.get("TESSERA_FUZZ_PORTAL_TOKEN", "")
SPARE_TOKENS = [t for t in os.environ.get("TESSERA_FUZZ_PORTAL_SPARE_TOKENS", "").split(",") if t]
LOGOUT = "/api/white-label/portal/auth/logout"
AUTH = {
    "signed": Signed,
    "domainKey": DomainKey,
    "portalSession": (lambda: Bearer(PORTAL_TOKEN)) if PORTAL_TOKEN else None,
}


def schemes(case) -> set:
    raw = getattr(getattr(case.operation, "definition", None), "raw", None) or {}
    return {name for requirement in raw.get("security", []) for name in requirement}


def known_campaign(value):
    if CAMPAIGNS and isinstance(value, str) and RNG.random() < 0.7:
        return RNG.choice(CAMPAIGNS)
    return value


@schemathesis.hook
def before_call(context, case, kwargs):
    if isinstance(case.body, dict) and "campaignId" in case.body:
        case.body["campaignId"] = known_campaign(case.body["campaignId"])
    for where in (case.query, case.path_parameters):
        if isinstance(where, dict) and "campaignId" in where:
            where["campaignId"] = known_campaign(where["campaignId"])
    usable = sorted(name for name in schemes(case) if AUTH.get(name))
    if not usable:
        return
    if case.path == LOGOUT:
        kwargs["auth"] = Bearer(SPARE_TOKENS.pop() if SPARE_TOKENS else "tps_" + "0" * 64)
        return
    # An operation with several schemes takes one of them at random per request.
    kwargs["auth"] = AUTH[RNG.choice(usable)]()


def seed(base_url: str) -> None:
    """Gives the fuzzer something to read: an approved ticketing campaign with ticket types, a
    voting campaign with a participant, and a submission (`python -c 'import fuzz_hooks; ...'`)."""

    def call(method: str, path: str, body=None):
        r = requests.request(
            method,
            base_url + "/api/white-label/v1" + path,
            data=None if body is None else __import__("json").dumps(body).encode(),
            headers={"content-type": "application/json"},
            auth=Signed(),
            timeout=10,
        )
        if r.status_code >= 300:
            raise SystemExit(f"seed {method} {path}: {r.status_code} {r.text}")
        return r.json()["data"]

    ticketing = call("POST", "/campaigns", {
        "title": "Accra Jazz Night", "description": "An evening of live jazz in Accra.",
        "campaign_type": "ticketing", "start_date": "2030-03-06T18:00:00Z", "end_date": "2030-03-07T01:00:00Z",
        "status": "approved", "metadata": {"externalId": "evt-1"},
    })["id"]
    call("POST", "/ticket-types/bootstrap", {"campaignId": ticketing, "ticketTypes": [
        {"name": "Regular", "price": 150, "quantity_available": 500},
        {"name": "VIP", "ticket_type": "vip", "price": 450.5, "quantity_available": 50,
         "required_attendee_fields": [{"key": "full_name", "label": "Full name", "type": "text", "required": True}]},
    ]})
    voting = call("POST", "/campaigns", {
        "title": "Best New Artiste", "description": "Vote for the best new artiste of the year.",
        "campaign_type": "voting", "start_date": "2030-01-01T00:00:00Z", "end_date": "2030-02-01T00:00:00Z",
        "vote_price": 1.5, "status": "approved",
    })["id"]
    call("POST", "/participants", {"campaignId": voting, "name": "Ama Mensah", "imageUrl": "https://cdn.example.com/a.png"})
    call("POST", "/submissions", {"type": "vendor", "name": "Kofi Foods", "email": "kofi@example.com", "campaignId": ticketing})
    print(f"{ticketing},{voting}")
    call("PATCH", "/settings/payments", {"config": {"defaultProvider": "provider_a", "providers": {"provider_a": {"secretKey": "sk_test_1234"}}}})
