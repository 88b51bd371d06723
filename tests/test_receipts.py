"""Signed receipts (docs/api.md, "Receipts"): the portal signs every decision, the client checks before it runs."""

import base64
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import hitl_client
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.core.management import CommandError, call_command
from hitl_client import GatedCall, HitlClient
from hitl_client.receipts import ReceiptRefused, UnknownKey, keys_of, verify_receipt

from approvals.engine.api import registration_answer
from approvals.models import ApprovalRequest
from approvals.presenters.api import approval_as_dict
from approvals.receipts.keys import jwks, kid_of, receipt_keys, receipt_keys_reset
from workspaces.access import actor_for_token
from workspaces.models import ApiToken, hash_token

from .approvals.engine_support import decide, gate_body, make_support_config
from .helpers import make_token

ROOT = Path(__file__).resolve().parent.parent
RUN = {"run_id": "run_7", "thread_id": "thr_1", "caller": "support-bot"}
CALL = dict(kind="delete", target="customer T-4821", operation="delete", call_id="call_1", **RUN)
CALL_ARGUMENTS = {"customer_id": "T-4821"}


@pytest.fixture
def support(acme, alice):
    return make_support_config(acme, alice)


@pytest.fixture
def client(live_server, acme) -> HitlClient:
    return HitlClient(live_server.url, make_token(acme, engine="support-engine"))


class CountingClient(HitlClient):
    """Counts the JWKS fetches (each is a GET of /.well-known/jwks.json on the live server)."""

    fetches = 0

    def jwks(self):
        self.fetches += 1
        return super().jwks()


def approved(client: HitlClient, served: dict, bob, *, call_id: str = "call_1", arguments=None) -> dict:
    """A gated call registered and approved by bob: the request as the engine reads it, receipt and all."""
    call = GatedCall(**{**CALL, "call_id": call_id, "arguments": arguments or CALL_ARGUMENTS})
    gate = hitl_client.find_gate(served, kind="delete", target=call.target)
    asked = client.request_approval(served, gate, call)
    decide(asked["id"], bob, "approve", reason="Checked.")
    return client.get(asked["id"])


def gated(arguments=None) -> GatedCall:
    return GatedCall(**{**CALL, "arguments": arguments or CALL_ARGUMENTS})


def test_a_decided_request_carries_a_receipt_over_exactly_the_contracts_payload(client, support, bob, live_server):
    served = client.served(support.public_id)
    approval = approved(client, served, bob)

    document = client._call("GET", "/.well-known/jwks.json")[1]
    claims = verify_receipt(approval["receipt"], keys_of(document), approval_id=approval["id"])
    header = jwt.get_unverified_header(approval["receipt"])

    assert header["alg"] == "EdDSA" and header["kid"] == document["keys"][0]["kid"]
    assert claims == {
        "iss": claims["iss"],
        "sub": approval["id"],
        "workspace": "acme",
        "config_id": support.public_id,
        "config_version": 1,
        "rule_id": approval["rule_id"],
        "run_id": "run_7",
        "status": "approved",
        "action": "resume",
        "call_digest": approval["call_digest"],
        "decided_by": "bob@acme.test",
        "decided_at": approval["decision"]["decided_at"],
        "grant_id": None,
        "iat": claims["iat"],
    }
    assert isinstance(claims["iat"], int) and claims["iss"].startswith("http")  # the server's HITL_BASE_URL
    assert client.get(approval["id"])["receipt"] == approval["receipt"]  # signed once: the same bytes each read


def test_a_pending_request_has_no_receipt_and_a_rejected_one_has_its_own(client, support, bob):
    served = client.served(support.public_id)
    gate = hitl_client.find_gate(served, kind="delete", target=CALL["target"])
    asked = client.request_approval(served, gate, gated())
    assert asked["receipt"] is None

    decide(asked["id"], bob, "reject", reason="Not this one.")
    claims = client.check_receipt(client.get(asked["id"]), call_digest=asked["call_digest"])
    assert (claims["status"], claims["action"]) == ("rejected", "halt")


def test_the_client_verifies_before_it_runs_and_fetches_the_keys_once(live_server, acme, support, bob):
    client = CountingClient(live_server.url, make_token(acme, engine="support-engine"))
    served = client.served(support.public_id)
    for call_id in ("call_1", "call_2", "call_3"):
        approval = approved(client, served, bob, call_id=call_id)
        call = GatedCall(**{**CALL, "call_id": call_id, "arguments": CALL_ARGUMENTS})
        assert client.judged(served, approval, call).state == "approved"
    assert client.fetches == 1


def refused(client: HitlClient, served: dict, approval: dict, call: GatedCall | None = None):
    ran = []
    verdict = client.judged(served, approval, call or gated())
    if verdict.allowed:
        ran.append(call)
    return verdict, ran


def test_a_receipt_with_one_byte_changed_is_refused(client, support, bob):
    served = client.served(support.public_id)
    approval = approved(client, served, bob)
    head, payload, signature = approval["receipt"].split(".")
    raw = bytearray(base64.urlsafe_b64decode(signature + "=="))
    raw[10] ^= 0x01
    changed = base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()

    verdict, ran = refused(client, served, {**approval, "receipt": f"{head}.{payload}.{changed}"})

    assert (verdict.allowed, verdict.state, ran) == (False, "receipt_refused", [])
    assert "does not verify" in verdict.message

    # …and one byte of the payload (the call approved at another digest) too.
    claims = json.loads(base64.urlsafe_b64decode(payload + "=="))
    forged = base64.urlsafe_b64encode(json.dumps({**claims, "status": "approved"}).encode()).rstrip(b"=").decode()
    verdict, _ = refused(client, served, {**approval, "receipt": f"{head}.{forged}x.{signature}"})
    assert verdict.state == "receipt_refused"


def test_a_receipt_signed_with_another_key_is_refused(client, support, bob):
    served = client.served(support.public_id)
    approval = approved(client, served, bob)
    claims = jwt.decode(approval["receipt"], options={"verify_signature": False})
    kid = jwt.get_unverified_header(approval["receipt"])["kid"]
    impostor = jwt.encode(claims, Ed25519PrivateKey.generate(), algorithm="EdDSA", headers={"kid": kid})

    verdict, ran = refused(client, served, {**approval, "receipt": impostor})

    assert (verdict.state, ran) == ("receipt_refused", [])


def test_another_requests_receipt_is_refused(client, support, bob):
    served = client.served(support.public_id)
    first = approved(client, served, bob, call_id="call_1")
    second = approved(client, served, bob, call_id="call_2")

    verdict, ran = refused(client, served, {**second, "receipt": first["receipt"]})

    assert (verdict.state, ran) == ("receipt_refused", [])
    assert first["id"] in verdict.message


def test_a_receipt_for_another_call_is_refused(client, support, bob):
    served = client.served(support.public_id)
    other = approved(client, served, bob, call_id="call_9", arguments={"customer_id": "T-1"})
    # The portal's answer claims this call's digest; the receipt approves the other call's.
    mine = approved(client, served, bob, call_id="call_1")
    forged = {**mine, "receipt": other["receipt"], "id": other["id"]}

    verdict, ran = refused(client, served, forged)

    assert (verdict.state, ran) == ("receipt_refused", [])
    assert "another call" in verdict.message


def test_a_receipt_with_an_unknown_or_retired_kid_is_refused_after_fetching_the_keys_again(
    live_server, acme, support, bob
):
    client = CountingClient(live_server.url, make_token(acme, engine="support-engine"))
    served = client.served(support.public_id)
    approval = approved(client, served, bob)
    assert client.judged(served, approval, gated()).state == "approved"  # the first fetch
    claims = jwt.decode(approval["receipt"], options={"verify_signature": False})
    retired = Ed25519PrivateKey.generate()
    stale = jwt.encode(claims, retired, algorithm="EdDSA", headers={"kid": kid_of(retired.public_key())})

    verdict, ran = refused(client, served, {**approval, "receipt": stale})

    assert (verdict.state, ran) == ("receipt_refused", [])
    assert "does not list" in verdict.message
    assert client.fetches == 2  # fetched again for the kid it did not know, then refused
    with pytest.raises(UnknownKey):
        client.check_receipt({**approval, "receipt": stale}, call_digest=approval["call_digest"])


def test_an_approval_without_a_receipt_is_refused(client, support, bob):
    served = client.served(support.public_id)
    approval = approved(client, served, bob)

    verdict, ran = refused(client, served, {**approval, "receipt": None})

    assert (verdict.state, ran) == ("receipt_refused", [])


def decided_here(acme, support, bob) -> ApprovalRequest:
    """A request registered and approved in this process (its receipt signed with this process's key)."""
    raw = make_token(acme, engine="support-engine")
    actor = actor_for_token(ApiToken.objects.select_related("workspace").get(digest=hash_token(raw)))
    _, answer = registration_answer(actor=actor, idempotency_header=None, body=gate_body(support))
    decide(answer["id"], bob, "approve")
    return ApprovalRequest.objects.select_related("config").get(public_id=answer["id"])


def test_rotation_keeps_old_receipts_verifiable(settings, acme, bob, support):
    approval = decided_here(acme, support, bob)
    old = approval_as_dict(ApprovalRequest.objects.select_related("config").get(pk=approval.pk))["receipt"]
    old_kid = receipt_keys().kid

    out = io.StringIO()
    call_command("hitl", "receipt-key", "rotate", stdout=out)
    text = out.getvalue()
    blocks = re.findall(r"-----BEGIN [A-Z ]+-----.+?-----END [A-Z ]+-----", text, re.DOTALL)
    new_private = next(block for block in blocks if "PRIVATE" in block)
    previous = "\n".join(block for block in blocks if "PUBLIC" in block)
    settings.HITL_RECEIPT_KEY, settings.HITL_RECEIPT_PREVIOUS_KEYS = new_private, previous
    receipt_keys_reset()
    try:
        keys = keys_of(jwks())
        assert receipt_keys().kid != old_kid and set(keys) == {receipt_keys().kid, old_kid}
        assert verify_receipt(old, keys, approval_id=approval.public_id)["sub"] == approval.public_id
        new = approval_as_dict(ApprovalRequest.objects.select_related("config").get(pk=approval.pk))["receipt"]
        assert jwt.get_unverified_header(new)["kid"] == receipt_keys().kid  # signed with the new key from now on

        out = io.StringIO()
        call_command("hitl", "receipt", "verify", old, "--id", approval.public_id, stdout=out)
        assert "Valid" in out.getvalue()

        # Retired: without the previous key the old receipt is an unknown kid.
        settings.HITL_RECEIPT_PREVIOUS_KEYS = ""
        receipt_keys_reset()
        with pytest.raises(UnknownKey):
            verify_receipt(old, keys_of(jwks()))
        with pytest.raises(CommandError, match="does not list"):
            call_command("hitl", "receipt", "verify", old)
    finally:
        receipt_keys_reset()


def test_receipt_verify_refuses_what_is_not_a_receipt(db):
    with pytest.raises(CommandError, match="Refused"):
        call_command("hitl", "receipt", "verify", "not.a.receipt")
    with pytest.raises(ReceiptRefused):
        verify_receipt("", {})


@pytest.mark.parametrize(
    ("value", "said"),
    [(None, "HITL_RECEIPT_KEY is not set"), ("not a key", "not a PEM private key"), ("rsa", "not an Ed25519 key")],
)
def test_the_startup_check_refuses_a_missing_or_malformed_key_with_debug_off(value, said):
    env = {k: v for k, v in os.environ.items() if k != "HITL_RECEIPT_KEY"}
    env.update(DEBUG="false", SECRET_KEY="x" * 60, ALLOWED_HOSTS="localhost")
    if value == "rsa":
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        value = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode()
    if value is not None:
        env["HITL_RECEIPT_KEY"] = value
    result = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode != 0
    assert said in result.stderr and "hitl receipt-key new" in result.stderr


def test_receipt_key_new_runs_where_the_startup_check_asks_for_a_key():
    env = {k: v for k, v in os.environ.items() if k != "HITL_RECEIPT_KEY"}
    env.update(DEBUG="false", SECRET_KEY="x" * 60, ALLOWED_HOSTS="localhost")

    result = subprocess.run(
        [sys.executable, "manage.py", "hitl", "receipt-key", "new"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("-----BEGIN PRIVATE KEY-----")
    assert "Set HITL_RECEIPT_KEY to this PEM" in result.stderr
    env["HITL_RECEIPT_KEY"] = result.stdout
    checked = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert "HITL_RECEIPT_KEY" not in checked.stderr
