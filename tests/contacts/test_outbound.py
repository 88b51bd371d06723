"""Webhook URLs reach public addresses only, and no redirect is followed (contacts/outbound.py).

The tests that take the loopback fakes' allowance away (tests/loopback.py) stand for a host that
allows nothing internal; the redirect test keeps it, to show a 302 is not followed even to an
address the host allows."""

import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from contacts.models import Contact, Delivery
from contacts.outbound import kind_of, url_refusal
from contacts.sending import deliveries_send_due
from tests.helpers import error_of, make_config, register_gate


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://10.0.0.5/hook", "private"),
        ("http://[::1]/hook", "loopback"),
        ("http://127.0.0.1:5432/", "loopback"),
        ("http://localhost:8000/hook", "loopback"),
        ("http://[::ffff:10.0.0.5]/hook", "private"),
        ("http://[2002:a00:5::1]/hook", "private"),  # 6to4 carrying 10.0.0.5
        ("http://[64:ff9b::a9fe:a9fe]/hook", "link-local"),  # NAT64 carrying 169.254.169.254
        ("http://100.64.0.1/hook", "reserved"),  # carrier-grade NAT
    ],
)
def test_internal_addresses_are_refused_whatever_their_spelling(settings, url, kind):
    settings.HITL_OUTBOUND_ALLOW = []
    assert url_refusal(url).startswith(f"reaches a {kind} address;")


def test_public_addresses_pass_and_the_host_allows_internal_ones_by_network_or_name(settings):
    import ipaddress

    settings.HITL_OUTBOUND_ALLOW = []
    assert kind_of(ipaddress.ip_address("93.184.216.34")) is None
    assert url_refusal("https://93.184.216.34/hook") is None
    assert url_refusal("https://[2606:4700::1111]/hook") is None
    settings.HITL_OUTBOUND_ALLOW = ["10.0.0.0/8", "localhost"]
    assert url_refusal("http://10.0.0.5/hook") is None
    assert url_refusal("http://localhost/hook") is None
    assert url_refusal("http://127.0.0.1/hook") is not None  # allowed by name only, not by its address


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["http://169.254.169.254/latest/meta-data/", "http://10.0.0.5/hook", "http://[::1]/"])
def test_a_webhook_contact_whose_variable_holds_an_internal_url_is_refused_when_saved(
    alice_api, acme, settings, monkeypatch, url
):
    settings.HITL_OUTBOUND_ALLOW = []
    monkeypatch.setenv("HITL_ACME_METADATA", url)
    monkeypatch.setenv("HITL_ACME_METADATA_SECRET", "whsec_ZGVtby1zaWduaW5nLXNlY3JldA==")
    config = make_config(acme)
    response = alice_api.post(
        f"/api/v1/configs/{config.public_id}/contacts",
        {
            "name": "Metadata",
            "channel": "webhook",
            "channel_ref": "${HITL_ACME_METADATA}",
            "secret_ref": "${HITL_ACME_METADATA_SECRET}",
        },
    )
    assert response.status_code == 400, response.text
    message = error_of(response)["fields"]["channel_ref"]
    assert message.startswith("channel_ref names HITL_ACME_METADATA, whose URL reaches a ")
    assert url.split("/")[2].strip("[]") not in message  # the host's value is not shown to the admin
    assert not Contact.objects.exists()


@pytest.mark.django_db
def test_a_test_message_to_a_contact_whose_url_became_internal_is_refused(alice_api, acme, settings, monkeypatch):
    monkeypatch.setenv("HITL_ACME_HOOK", "https://93.184.216.34/hook")
    monkeypatch.setenv("HITL_ACME_HOOK_SECRET", "whsec_ZGVtby1zaWduaW5nLXNlY3JldA==")
    config = make_config(acme)
    path = f"/api/v1/configs/{config.public_id}/contacts"
    created = alice_api.post(
        path,
        {
            "name": "Hook",
            "channel": "webhook",
            "channel_ref": "${HITL_ACME_HOOK}",
            "secret_ref": "${HITL_ACME_HOOK_SECRET}",
        },
    )
    assert created.status_code == 201, created.text
    settings.HITL_OUTBOUND_ALLOW = []
    monkeypatch.setenv("HITL_ACME_HOOK", "http://127.0.0.1:5432/")
    refused = alice_api.post(f"{path}/{created.json()['id']}/test")
    assert refused.status_code == 400, refused.text
    assert "reaches a loopback address" in error_of(refused)["fields"]["channel_ref"]
    assert not Delivery.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_delivery_to_an_internal_address_fails_at_once_and_connects_nowhere(notified, receiver, hook_env, settings):
    """The URL was public when saved; now the variable (or its name's DNS) points inward: the send refuses."""
    settings.HITL_OUTBOUND_ALLOW = []
    approval = register_gate(notified)
    deliveries_send_due()
    delivery = Delivery.objects.get(approval=approval, event="requested")
    assert (delivery.status, delivery.attempts) == ("failed", 1)  # not retried: sending again cannot help
    variable = next(name for name in hook_env if not name.endswith("_SECRET"))
    assert delivery.last_error.startswith(f"the URL in {variable} reaches a loopback address;")
    assert "127.0.0.1" not in delivery.last_error
    assert receiver.received == [] and receiver.bad_signatures == 0


class Listener:
    """An endpoint on loopback recording every request, whatever its method, and answering `status`
    (with a Location header when given)."""

    def __init__(self, status: int = 200, location: str = "") -> None:
        self.requests: list[tuple[str, dict[str, str]]] = []
        listener = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def answer(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                listener.requests.append((self.command, {k.lower(): v for k, v in self.headers.items()}))
                self.send_response(status)
                if location:
                    self.send_header("Location", location)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = do_PUT = do_HEAD = answer

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.django_db(transaction=True)
def test_a_302_to_loopback_is_not_followed(notified, hook_env, monkeypatch):
    variable = next(name for name in hook_env if not name.endswith("_SECRET"))
    inside = Listener(200)
    redirecting = Listener(302, location=inside.url.replace("/hook", "/internal"))
    try:
        monkeypatch.setenv(variable, redirecting.url)
        approval = register_gate(notified)
        deliveries_send_due()
    finally:
        redirecting.close()
        inside.close()
    assert [method for method, _ in redirecting.requests] == ["POST"]
    delivery = Delivery.objects.get(approval=approval, event="requested")
    assert (delivery.status, delivery.attempts) == ("failed", 1)
    assert delivery.last_error.startswith("HTTP 302 from the endpoint: redirects are not followed")
    # Neither the POST again nor a GET carrying the webhook-* headers reached where the 302 pointed.
    assert inside.requests == []


def test_an_allowance_that_is_neither_a_network_nor_a_host_name_stops_the_portal_from_starting():
    import subprocess
    import sys

    from tests.loopback import ROOT

    env = {
        **os.environ,
        "HITL_OUTBOUND_ALLOW": "10.0.0.0/8,10.0.0.0/33",
        "DJANGO_SETTINGS_MODULE": "hitl_portal.settings",
    }
    started = subprocess.run(
        [sys.executable, "-c", "from django.conf import settings; settings.HITL_OUTBOUND_ALLOW"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert started.returncode != 0
    assert "HITL_OUTBOUND_ALLOW: '10.0.0.0/33' is neither a network" in started.stderr
