"""Small make_* helpers and an HTTP client for tests. Tests read as sentences; these keep them short."""

import contextlib
import json
from datetime import timedelta
from unittest import mock
from urllib.parse import urlencode

import requests
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.test import Client
from django.utils import timezone

from rules import services as rule_services
from workspaces import services as ws_services

PASSWORD = "correct-horse-battery"


class QuickPBKDF2PasswordHasher(PBKDF2PasswordHasher):
    """Django's hasher with 1,000 iterations instead of 1,000,000 (about a second per password here).

    Every test hashes with it (tests/conftest.py). The stored hash has the same format
    (pbkdf2_sha256$iterations$salt$hash), so gunicorn and cluster subprocesses on the production
    settings verify it too. How strong the hashing is stays Django's business, not these tests'.
    """

    iterations = 1_000


def make_workspace(slug: str = "acme", plan: str = "pro"):
    return ws_services.workspace_create(slug=slug, plan=plan)


def make_member(workspace, email: str, role: str):
    return ws_services.member_add(workspace=workspace, email=email, role=role, password=PASSWORD).user


def make_token(workspace, user=None, engine: str = "") -> str:
    _, raw = ws_services.token_create(workspace=workspace, user=user, engine_name=engine)
    return raw


def make_config(workspace, name: str = "Support agent", **settings):
    config = rule_services.config_create(workspace=workspace, name=name)
    if settings:
        rule_services.config_update(config=config, **settings)
    return config


def make_rule(config, **fields):
    return rule_services.rule_create(config=config, **fields)


def publish(config, user=None, note: str = ""):
    return rule_services.config_publish(config=config, user=user, note=note)


GATE = {
    "kind": "gate",
    "run_id": "run_1",
    "thread_id": "thr_1",
    "caller": "support-bot",
    "target": "customer T-4821",
    "operation": "delete",
}


def register_gate(world: dict, **fields):
    """A gate request through the registration service, as the engine API makes it, in a world a conftest
    built: its workspace, config, published version and rule (and engine key, else the workspace's); the
    world's own `fields` (a summary, arguments) under the call's."""
    from approvals.engine.register import Sent, register
    from workspaces.models import ApiToken

    data = {
        **GATE,
        "config_id": world["config"].public_id,
        "config_version": world["version"].number,
        "rule_id": world["rule"].public_id,
        **world.get("fields", {}),
        **fields,
    }
    engine_key = world.get("engine_key") or ApiToken.objects.get(workspace=world["workspace"], kind="engine")
    return register(workspace=world["workspace"], engine_key=engine_key, sent=Sent(**data)).approval


def chat_world(workspace, *, channel: str, approvers: tuple[str, str], leads: tuple[str, str]) -> dict:
    """A config whose delete rule tells the approvers' chat (Slack channel, Telegram chat) of every event, and
    whose mcp_billing rule tells the leads' too; published; an engine key. `approvers`, `leads`: (name, ref)."""
    from contacts.services import contact_create

    config = make_config(workspace, pass_information_level="summary")
    approvers_contact = contact_create(config=config, name=approvers[0], channel=channel, channel_ref=approvers[1])
    leads_contact = contact_create(config=config, name=leads[0], channel=channel, channel_ref=leads[1])
    rule = make_rule(config, message="Deleting a customer is final.", notify=[approvers_contact.public_id])
    both = make_rule(
        config, kind="mcp_server", match="mcp_billing", notify=[approvers_contact.public_id, leads_contact.public_id]
    )
    version = publish(config)
    make_token(workspace, engine="support-engine")
    return {
        "workspace": workspace,
        "channel": channel,
        "config": config,
        "contact": approvers_contact,
        "rule": rule,
        "rule_to_both": both,
        "version": version,
        "fields": {"summary": "Customer asked to close the account"},
    }


def chat_posted(world: dict, *, to_both: bool = False, **fields) -> tuple:
    """A gate request in a chat_world whose messages the outbox sent: (the request, {chat: its message}), keyed
    by Slack channel or Telegram chat id. The approvers' chat only, or with `to_both` (the mcp_billing rule)
    the leads' too."""
    from contacts.sending import deliveries_send_due
    from integrations.models import SlackMessage, TelegramMessage

    if to_both:
        fields = {"rule_id": world["rule_to_both"].public_id, "target": "mcp_billing", **fields}
    approval = register_gate(world, **fields)
    deliveries_send_due()
    if world["channel"] == "slack":
        return approval, {message.channel: message for message in SlackMessage.objects.filter(approval=approval)}
    return approval, {message.chat_id: message for message in TelegramMessage.objects.filter(approval=approval)}


def comments_via_api(api: "Api | ClientApi", approval) -> list[dict]:
    """The request's comments as the comments API lists them to `api`'s caller."""
    response = api.get(f"/api/v1/approvals/{approval.public_id}/comments")
    assert response.status_code == 200, response.text
    return response.json()["results"]


def deletion_request(config):
    """A pending request to delete customer T-4821 under `config`, summary level."""
    from tests.factories import make_approval

    return make_approval(
        config,
        target="customer T-4821",
        caller="support-bot",
        message="Deleting a customer is final.",
        summary="Customer asked to close the account",
        level="summary",
    )


def change_draft(config) -> None:
    """Some change to the draft (its per-turn token cap), so the next publish has something new to freeze."""
    config.refresh_from_db()
    rule_services.config_update(config=config, token_cap_per_turn=(config.token_cap_per_turn or 0) + 1000)


class Api:
    """Real HTTP against the live server, as an engine or a script would call it."""

    def __init__(self, base_url: str, token: str | None = None):
        self.base_url = base_url.rstrip("/")
        self.session = requests.Session()
        if token:
            self.session.headers["Authorization"] = f"Bearer {token}"

    def request(self, method: str, path: str, **kwargs) -> requests.Response:
        kwargs.setdefault("timeout", 40)
        return self.session.request(method, self.base_url + path, **kwargs)

    def get(self, path: str, **kwargs) -> requests.Response:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, json=None, **kwargs) -> requests.Response:
        return self.request("POST", path, json=json, **kwargs)

    def patch(self, path: str, json=None, **kwargs) -> requests.Response:
        return self.request("PATCH", path, json=json, **kwargs)

    def put(self, path: str, json=None, **kwargs) -> requests.Response:
        return self.request("PUT", path, json=json, **kwargs)

    def delete(self, path: str, **kwargs) -> requests.Response:
        return self.request("DELETE", path, **kwargs)


_dumps = json.dumps


class ClientResponse:
    """A Django test response read like a `requests` one (status_code, headers, text, json())."""

    def __init__(self, response) -> None:
        self.status_code = response.status_code
        self.headers = response.headers
        self.content = response.content
        self.text = response.content.decode()

    def json(self):
        return json.loads(self.content)


class ClientApi:
    """The same calls as `Api`, through Django's test client: for tests where real HTTP adds nothing.

    Long-poll, races and the browser need a real server (`Api` on `live_server`); the rest run in
    the test's transaction, which is rolled back instead of every table being emptied.
    """

    base_url = "http://testserver"

    def __init__(self, token: str | None = None) -> None:
        self.client = Client()
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}

    def request(self, method: str, path: str, *, json=None, data=None, params=None, headers=None, timeout=None):
        if path.startswith(self.base_url):
            path = path[len(self.base_url) :]
        if params:
            path += ("&" if "?" in path else "?") + urlencode(params, doseq=True)
        headers = {**self.headers, **(headers or {})}
        content_type = headers.pop("Content-Type", "application/json")
        body = data if data is not None else (_dumps(json) if json is not None else "")
        return ClientResponse(self.client.generic(method, path, body, content_type=content_type, headers=headers))

    def get(self, path: str, **kwargs) -> ClientResponse:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, json=None, **kwargs) -> ClientResponse:
        return self.request("POST", path, json=json, **kwargs)

    def patch(self, path: str, json=None, **kwargs) -> ClientResponse:
        return self.request("PATCH", path, json=json, **kwargs)

    def put(self, path: str, json=None, **kwargs) -> ClientResponse:
        return self.request("PUT", path, json=json, **kwargs)

    def delete(self, path: str, **kwargs) -> ClientResponse:
        return self.request("DELETE", path, **kwargs)


@contextlib.contextmanager
def travel(delta: timedelta):
    """Move the clock forward by `delta` (for this process, live server threads included)."""
    moved = timezone.now() + delta
    with mock.patch("django.utils.timezone.now", return_value=moved):
        yield moved


def error_of(response: "requests.Response | ClientResponse") -> dict:
    """The docs/api.md error object of a 4xx response."""
    body = response.json()
    assert set(body) == {"error"}, body
    assert {"code", "message", "fields"} <= set(body["error"]), body
    return body["error"]


# The portal's own packages (not tests, bench or clients): what the code walks in the tests read.
APP_PACKAGES = (
    "approvals",
    "audit",
    "collaboration",
    "common",
    "contacts",
    "edge",
    "hitl_portal",
    "insights",
    "integrations",
    "launch",
    "passkeys",
    "people",
    "push",
    "rules",
    "workspaces",
)


def run_queued(func: str) -> list:
    """What the django-q2 cluster would do with the tasks of `func` queued so far: run each once, here (where
    the test's fakes are set up), and take it off the queue; their results, in the order queued."""
    from django.utils.module_loading import import_string
    from django_q.models import OrmQ

    results = []
    for queued in OrmQ.objects.order_by("id"):
        if queued.task.get("func") == func:
            results.append(import_string(func)(*queued.task.get("args", ()), **queued.task.get("kwargs", {})))
            queued.delete()
    return results
