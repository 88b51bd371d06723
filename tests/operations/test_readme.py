"""The README works as written: its curl example, run by bash against the server as deployed, and
its deploy section's install line is the one CI's production check runs."""

import importlib.util
import re
import subprocess
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from tests.asgi import AsgiServer

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("production_check", ROOT / ".ci" / "production_check.py")
production_check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(production_check)


def test_the_readme_is_short_and_its_deploy_section_installs_requirements_txt():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 500
    assert production_check.deploy_commands() == ["pip install -r requirements.txt"]


@pytest.mark.django_db(transaction=True)
def test_the_readme_curl_example_registers_a_request_and_waits_for_it(tmp_path):
    out = StringIO()
    call_command("hitl", "demo", "--url", "http://127.0.0.1:8000/", stdout=out)
    key = re.search(r"Engine key \(shown once\): (hitl_\S+)", out.getvalue())[1]
    config = re.search(r"--config (cfg_\w+)", out.getvalue())[1]
    with AsgiServer() as server:
        result = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", production_check.curl_example()],
            cwd=tmp_path,
            env={"PATH": "/usr/bin:/bin", "HITL": server.url, "KEY": key, "CFG": config},
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert result.returncode == 0, result.stderr
    compact = result.stdout.replace(" ", "")
    assert '"status":"pending"' in compact and '"id":"apr_' in compact, result.stdout
    assert '"error"' not in compact, result.stdout
