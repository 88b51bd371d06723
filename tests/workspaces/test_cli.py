"""`python manage.py hitl workspace|member|token …` (docs/api.md, CLI): exit 0, or 2 and one line on bad input."""

import subprocess
import sys
from io import StringIO

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command, execute_from_command_line
from django.core.management.base import CommandError

from workspaces.models import ApiToken, Membership, Workspace, hash_token

from ..helpers import make_config


def hitl(*args) -> str:
    out = StringIO()
    call_command("hitl", *args, stdout=out)
    return out.getvalue()


def test_it_creates_a_workspace_and_changes_its_plan(db):
    assert "Created workspace acme on the pro plan." in hitl("workspace", "create", "acme", "--plan", "pro")
    assert Workspace.objects.get(slug="acme").plan == "pro"
    hitl("workspace", "plan", "acme", "free")
    assert Workspace.objects.get(slug="acme").plan == "free"


def test_it_adds_a_member_creating_the_user(db):
    hitl("workspace", "create", "acme", "--plan", "pro")
    hitl("member", "add", "Dora@Acme.test", "--workspace", "acme", "--role", "reviewer")
    membership = Membership.objects.get()
    assert (membership.user.email, membership.role) == ("dora@acme.test", "reviewer")
    hitl("member", "add", "dora@acme.test", "--workspace", "acme", "--role", "admin")
    assert Membership.objects.get().role == "admin" and get_user_model().objects.count() == 1


def test_it_prints_a_working_user_token_alone_and_stores_its_hash(make_api, acme, alice):
    config = make_config(acme)
    out = hitl("token", "create", "--workspace", "acme", "--user", "alice@acme.test")
    raw = out.strip()
    assert out == raw + "\n" and raw.startswith("hitl_") and len(raw.splitlines()) == 1
    token = ApiToken.objects.get()
    assert token.digest == hash_token(raw) and raw not in (token.digest, token.hint)
    response = make_api(raw).get("/api/v1/configs")
    assert response.status_code == 200
    assert [c["id"] for c in response.json()["results"]] == [config.public_id]


def test_it_prints_an_engine_key(acme):
    raw = hitl("token", "create", "--workspace", "acme", "--engine", "support-engine").strip()
    token = ApiToken.objects.get()
    assert token.is_engine and token.name == "support-engine" and token.digest == hash_token(raw)


@pytest.mark.parametrize(
    "args, says",
    [
        (["workspace", "create", "acme"], "already exists"),
        (["workspace", "plan", "nowhere", "pro"], "No workspace with slug 'nowhere'"),
        (["member", "add", "not-an-email", "--workspace", "acme", "--role", "admin"], "not an email address"),
        (["token", "create", "--workspace", "acme", "--user", "ghost@acme.test"], "No user with email"),
        (["token", "create", "--workspace", "acme"], "exactly one of --user EMAIL or --engine NAME"),
    ],
)
def test_it_refuses_bad_input_with_one_line(acme, args, says):
    with pytest.raises(CommandError, match=says) as refused:
        hitl(*args)
    assert "\n" not in str(refused.value)
    assert refused.value.returncode == 2


@pytest.mark.parametrize(
    "args",
    [
        ["workspace", "create", "x", "--plan", "gold"],
        ["workspace", "plan", "acme", "platinum"],
        ["member", "add", "a@b.test", "--workspace", "acme", "--role", "owner"],
        ["token", "create", "--workspace"],
        ["launch"],
    ],
)
def test_it_exits_2_with_one_line_from_the_command_line(args, capsys):
    # manage.py's entry point in this process (the real process is the test below): bad arguments are
    # refused before any database access — this test has none to give, so an access would fail it.
    with pytest.raises(SystemExit) as exited:
        execute_from_command_line(["manage.py", "hitl", *args])
    out, err = capsys.readouterr()
    assert exited.value.code == 2
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("hitl: ")
    assert out == ""


def test_a_real_process_exits_2_with_one_line_on_bad_arguments():
    result = subprocess.run(
        [sys.executable, "manage.py", "hitl", "workspace", "create", "x", "--plan", "gold"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=settings.BASE_DIR,
    )
    assert result.returncode == 2, result
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert result.stderr.startswith("hitl: ")
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("password", "says"),
    [
        ("short", "too short"),
        ("password123", "too common"),
        ("48213579120", "entirely numeric"),
    ],
)
def test_member_add_holds_a_password_to_djangos_validators(acme, password, says):
    with pytest.raises(CommandError, match=says):
        hitl("member", "add", "dave@acme.test", "--workspace", "acme", "--role", "reviewer", "--password", password)

    assert not get_user_model().objects.filter(email="dave@acme.test").exists()


def test_member_add_accepts_a_good_password(acme):
    hitl(
        "member", "add", "dave@acme.test", "--workspace", "acme", "--role", "reviewer", "--password", "plum-kite-orbit"
    )

    assert get_user_model().objects.get(email="dave@acme.test").check_password("plum-kite-orbit")


def test_token_revoke_takes_the_whole_key_or_its_prefix(acme):
    whole, other = hitl_token(acme, "first-engine"), hitl_token(acme, "second-engine")

    assert "Revoked" in hitl("token", "revoke", whole)
    assert ApiToken.objects.get(digest=hash_token(whole)).revoked_at is not None
    assert "Revoked" in hitl("token", "revoke", other[:11])
    assert ApiToken.objects.get(digest=hash_token(other)).revoked_at is not None


def test_token_revoke_refuses_a_wrong_key_without_echoing_it(acme):
    whole = hitl_token(acme, "an-engine")
    wrong = whole[:-4] + ("AAAA" if not whole.endswith("AAAA") else "BBBB")
    with pytest.raises(CommandError) as refused:
        hitl("token", "revoke", wrong)
    assert "give the whole key" in str(refused.value)
    assert wrong not in str(refused.value)  # a secret, or nearly one, is never printed back
    assert ApiToken.objects.get(digest=hash_token(whole)).revoked_at is None


@pytest.mark.parametrize(
    "email",
    ['=hyperlink("http://evil.example")@a.test', "no-at-sign", "a@", "@a.test", "a b@a.test", "a@a.test\nb@b.test"],
)
def test_member_add_refuses_what_is_not_an_email_address(acme, email):
    with pytest.raises(CommandError, match="email: .* is not an email address"):
        hitl("member", "add", email, "--workspace", "acme", "--role", "reviewer")
    assert not get_user_model().objects.filter(email__iexact=email.strip()).exists()


def test_the_service_refuses_a_bad_email_for_every_caller(acme):
    from django.core.exceptions import ValidationError

    from workspaces.services import member_add

    with pytest.raises(ValidationError) as refused:
        member_add(workspace=acme, email="=cmd|' /C calc'!A0@a.test", role="reviewer")
    assert "email" in refused.value.message_dict


def hitl_token(workspace, engine: str) -> str:
    return hitl("token", "create", "--workspace", workspace.slug, "--engine", engine).strip()
