"""Small make_* helpers and an HTTP client for tests. Tests read as sentences; these keep them short."""

import contextlib
from datetime import timedelta
from unittest import mock

import requests
from django.utils import timezone

from rules import services as rule_services
from workspaces import services as ws_services

PASSWORD = "correct-horse-battery"


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

    def delete(self, path: str, **kwargs) -> requests.Response:
        return self.request("DELETE", path, **kwargs)


@contextlib.contextmanager
def travel(delta: timedelta):
    """Move the clock forward by `delta` (for this process, live server threads included)."""
    moved = timezone.now() + delta
    with mock.patch("django.utils.timezone.now", return_value=moved):
        yield moved


def error_of(response: requests.Response) -> dict:
    """The docs/api.md error object of a 4xx response."""
    body = response.json()
    assert set(body) == {"error"}, body
    assert {"code", "message", "fields"} <= set(body["error"]), body
    return body["error"]
