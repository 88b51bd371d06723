"""Settings' DATABASES (hitl_portal/databases.py) with DATABASE_URL a transaction pooler (PgBouncer) or direct,
read from the settings a fresh process loads from the environment."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
URL = "postgres://hitl@127.0.0.1:6432/hitl"
READ = (
    "import json, django; from django.conf import settings; django.setup(); d = settings.DATABASES['default'];"
    " print(json.dumps({'prepare': d['OPTIONS'].get('prepare_threshold', 'unset'),"
    " 'no_cursors': d.get('DISABLE_SERVER_SIDE_CURSORS', False),"
    " 'listen': (settings.HITL_LISTEN_DATABASE or {}).get('HOST')}))"
)


def settings_with(**env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("HITL_")}
    environ.update(DJANGO_SETTINGS_MODULE="hitl_portal.settings", DATABASE_URL=URL, **env)
    return subprocess.run([sys.executable, "-c", READ], cwd=ROOT, env=environ, capture_output=True, text=True)


def test_a_transaction_pooler_gets_no_prepared_statement_no_server_side_cursor_and_a_direct_listen():
    read = settings_with(HITL_DB_TRANSACTION_POOLER="true", HITL_LISTEN_DATABASE_URL="postgres://hitl@db.internal/hitl")
    assert json.loads(read.stdout) == {"prepare": None, "no_cursors": True, "listen": "db.internal"}


def test_direct_the_registration_may_prepare_and_the_hub_listens_on_database_url():
    assert json.loads(settings_with().stdout) == {"prepare": 5, "no_cursors": False, "listen": None}


def test_wrong_values_are_refused_by_name():
    pooler = settings_with(HITL_DB_TRANSACTION_POOLER="sometimes")
    assert "HITL_DB_TRANSACTION_POOLER must be true or false" in pooler.stderr
    listen = settings_with(HITL_LISTEN_DATABASE_URL="sqlite:///x.db")
    assert "HITL_LISTEN_DATABASE_URL must name a PostgreSQL database" in listen.stderr
