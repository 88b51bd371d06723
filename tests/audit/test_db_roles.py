"""The role the portal runs as cannot switch history's triggers off (issue 40, item 7; docs/deploy.md, "Database
roles"): migrate grants it rows only, and `check --deploy` fails when it is a superuser or owns a history table."""

import subprocess
import sys

import psycopg
import pytest
from django.core.management import call_command
from django.db import connection
from psycopg import sql

from audit.checks import runtime_role_check
from audit.db_roles import HISTORY_TABLES, runtime_role_problems
from tests.loopback import subprocess_env

from ..asgi import ROOT

# Roles and grants must be committed for the role's own connection to see them.
pytestmark = pytest.mark.django_db(transaction=True)


def connect(user: str) -> psycopg.Connection:
    s = connection.settings_dict
    return psycopg.connect(
        host=s["HOST"] or "127.0.0.1", port=s["PORT"] or 5432, dbname=s["NAME"], user=user, autocommit=True
    )


@pytest.fixture
def role():
    """A login role for this test database alone (roles belong to the whole server, so it is named after it)."""
    name = f"hitl_app_{connection.settings_dict['NAME']}"[:63]
    owner = connection.settings_dict["USER"]
    with connect(owner) as admin:
        admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(name)))
        admin.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(name)))
        yield name
        admin.execute(sql.SQL("REASSIGN OWNED BY {} TO {}").format(sql.Identifier(name), sql.Identifier(owner)))
        admin.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
        admin.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


def test_migrate_grants_the_runtime_role_rows_and_it_cannot_switch_history_s_triggers_off(role, settings):
    settings.HITL_DB_RUNTIME_ROLE = role
    call_command("migrate", verbosity=0)  # as the owner, naming the runtime role: what docs/deploy.md says to run
    with connect(role) as app:
        for table in HISTORY_TABLES:
            app.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table)))  # it works with rows …
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="must be owner"):
                app.execute(sql.SQL("ALTER TABLE {} DISABLE TRIGGER USER").format(sql.Identifier(table)))
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                app.execute(sql.SQL("TRUNCATE {} CASCADE").format(sql.Identifier(table)))
        assert runtime_role_problems(app) == []


def test_check_deploy_fails_when_the_portal_runs_as_a_superuser(db):
    [error] = runtime_role_check(databases=["default"])  # the tests' own role is the server's superuser
    assert error.id == "hitl.E401" and "superuser" in error.msg
    assert "HITL_DB_RUNTIME_ROLE" in error.hint


def test_check_deploy_fails_when_the_portal_runs_as_the_owner_of_history(role):
    with connect(connection.settings_dict["USER"]) as admin:
        admin.execute(sql.SQL("ALTER TABLE audit_auditrecord OWNER TO {}").format(sql.Identifier(role)))
    with connect(role) as owner:  # the attack: as the owner, the triggers go off
        owner.execute("ALTER TABLE audit_auditrecord DISABLE TRIGGER USER")
        owner.execute("ALTER TABLE audit_auditrecord ENABLE TRIGGER USER")
        assert runtime_role_problems(owner) == [
            f"the database role {role} owns audit_auditrecord: an owner can switch off the triggers that keep "
            "history (ALTER TABLE … DISABLE TRIGGER)"
        ]
    s = connection.settings_dict
    url = f"postgres://{role}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--database", "default"],
        cwd=ROOT,
        env=subprocess_env(DATABASE_URL=url),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert f"hitl.E401) the database role {role} owns audit_auditrecord" in result.stderr + result.stdout
