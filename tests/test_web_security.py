"""Login throttling, the Content-Security-Policy, `check --deploy` and self-hosted API docs."""

import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.contrib.staticfiles import finders

from tests.factories import make_approval, make_token_cap
from tests.helpers import PASSWORD, make_config, make_rule, publish

ROOT = Path(__file__).resolve().parents[1]


def _login(client, path: str, password: str):
    return client.post(path, {"username": "alice@acme.test", "password": password})


@pytest.mark.parametrize("path", ["/login/", "/admin/login/"])
def test_it_locks_a_login_out_after_five_wrong_passwords(client, alice, path):
    alice.is_staff = True
    alice.save(update_fields=["is_staff"])
    for _ in range(5):
        assert _login(client, path, "wrong-password").status_code in (200, 429)

    right = _login(client, path, PASSWORD)

    assert right.status_code == 429
    assert "Too many failed logins" in right.content.decode()
    assert "_auth_user_id" not in client.session


def test_a_good_login_before_the_limit_resets_the_count(client, alice):
    for _ in range(4):
        _login(client, "/login/", "wrong-password")
    assert _login(client, "/login/", PASSWORD).status_code == 302
    client.logout()

    for _ in range(4):
        _login(client, "/login/", "wrong-password")

    assert _login(client, "/login/", PASSWORD).status_code == 302


class InlineCode(HTMLParser):
    """Collects what a strict CSP refuses: inline <script>, on*= handlers and style= attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag, attrs):
        names = dict(attrs)
        if tag == "script" and "src" not in names and names.get("type") != "application/json":
            self.found.append("<script> without src")
        if tag == "style":
            self.found.append("<style>")
        self.found += [f"{tag} {name}=" for name, _ in attrs if name.startswith("on") or name == "style"]


@pytest.fixture
def portal_pages(acme, globex, alice):
    from workspaces.services import member_add

    member_add(workspace=globex, email="alice@acme.test", role="reviewer")  # two workspaces: the switcher shows
    config = make_config(acme, "Support agent")
    rule = make_rule(config, message="Check first")
    publish(config, alice)
    make_approval(config)
    make_token_cap(config)
    make_approval(config, status="rejected")
    cfg = config.public_id
    return [
        "/hitl/approvals/",
        "/hitl/approvals/queue/",
        "/hitl/approvals/history/",
        "/hitl/configs/",
        f"/hitl/configs/{cfg}/rules/",
        f"/hitl/configs/{cfg}/rules/{rule.public_id}/",
        f"/hitl/configs/{cfg}/settings/",
        f"/hitl/configs/{cfg}/contacts/",
        f"/hitl/configs/{cfg}/versions/1/",
    ]


def test_every_page_carries_a_strict_csp_and_no_inline_code(client, alice, portal_pages):
    client.force_login(alice)
    for path in ["/login/", *portal_pages]:
        response = client.get(path)
        assert response.status_code == 200, path
        policy = response["Content-Security-Policy"]
        assert "default-src 'self'" in policy and "unsafe-inline" not in policy, policy
        parser = InlineCode()
        parser.feed(response.content.decode())
        assert parser.found == [], f"{path}: {parser.found}"


def test_the_api_docs_come_from_the_package_not_a_cdn(client):
    docs = client.get("/api/docs/").content.decode()
    script = client.get("/api/docs/?script=")

    assert "cdn" not in docs.lower() and "https://" not in docs
    assets = re.findall(r'(?:src|href)="/static/([^"]+)"', docs)
    assert any("swagger-ui-bundle.js" in asset for asset in assets)
    for asset in assets:
        assert finders.find(asset), asset
    assert script.status_code == 200 and script["Content-Type"].startswith("application/javascript")
    parser = InlineCode()
    parser.feed(docs)
    assert parser.found == []


def production_env() -> dict[str, str]:
    """docs/production.env, as the README tells an operator to use it."""
    lines = (ROOT / "docs" / "production.env").read_text().splitlines()
    settings = dict(line.split("=", 1) for line in lines if line.strip() and not line.startswith("#"))
    test_only = ("DJANGO_SETTINGS_MODULE", "DJANGO_ALLOW_ASYNC_UNSAFE")
    inherited = {k: v for k, v in os.environ.items() if k not in test_only}
    return {**inherited, **settings}


@pytest.fixture
def runtime_role_url(django_db_setup):
    """The test database as a role that owns nothing, as docs/deploy.md runs the portal (check --deploy fails
    otherwise): the database pytest-django made, so DATABASE_URL's own database need not exist."""
    import dj_database_url
    import psycopg
    from django.db import connection
    from psycopg import sql
    from psycopg.conninfo import make_conninfo

    url = os.environ["DATABASE_URL"].replace("postgres://", "postgresql://", 1)
    parsed, name = dj_database_url.parse(url), connection.settings_dict["NAME"]
    role = f"hitl_check_{name}"[:63]
    with psycopg.connect(make_conninfo(url, dbname=name), autocommit=True) as admin:
        admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))
        admin.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
        yield f"postgres://{role}@{parsed['HOST'] or '127.0.0.1'}:{parsed['PORT'] or 5432}/{name}"
        admin.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def test_check_deploy_is_clean_under_the_documented_production_settings(runtime_role_url):
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env={**production_env(), "DATABASE_URL": runtime_role_url},
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_production_settings_send_hsts_and_redirect_to_https(client, settings):
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_HSTS_SECONDS = 31536000
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

    plain = client.get("/login/")
    proxied = client.get("/login/", headers={"X-Forwarded-Proto": "https"})

    assert plain.status_code == 301 and plain["Location"].startswith("https://")
    assert proxied.status_code == 200
    assert proxied["Strict-Transport-Security"].startswith("max-age=31536000")
