"""End to end with a real django-q2 cluster: a click in Slack, then the message updated by the cluster."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from approvals.models import ApprovalRequest
from integrations.models import SlackMessage

from .conftest import BOB_SLACK, BOT_TOKEN, CHANNEL, click, post_signed

ROOT = Path(__file__).resolve().parents[2]


def test_db_url() -> str:
    s = connection.settings_dict
    return f"postgres://{s['USER']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


test_db_url.__test__ = False  # a helper, not a test


@pytest.mark.postgres
def test_after_a_click_the_cluster_removes_the_buttons_from_the_message(live_server, fake_slack, request_for_deletion):
    SlackMessage.objects.create(approval=request_for_deletion, channel=CHANNEL, ts="1764480000.000001")
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    env.update(
        DATABASE_URL=test_db_url(),
        DJANGO_SETTINGS_MODULE="hitl_portal.settings",
        HITL_SLACK_API_URL=fake_slack.url,
        HITL_SLACK_BOT_TOKEN=BOT_TOKEN,
        Q_WORKERS="1",
        LOG_LEVEL="WARNING",
    )
    cluster = subprocess.Popen(
        [sys.executable, "manage.py", "qcluster"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        response = post_signed(live_server.url, click(request_for_deletion, "approve", slack_user=BOB_SLACK))
        assert response.status_code == 200
        assert ApprovalRequest.objects.get(pk=request_for_deletion.pk).status == "approved"

        deadline = time.monotonic() + 30
        while not fake_slack.calls_to("chat.update") and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        os.killpg(cluster.pid, signal.SIGKILL)  # the whole group we started; a graceful stop takes ~30 s
        cluster.wait(timeout=20)

    [update] = fake_slack.calls_to("chat.update")
    assert (update["channel"], update["ts"]) == (CHANNEL, "1764480000.000001")
    assert not any(block["type"] == "actions" for block in update["blocks"])
    assert "Approved by bob@acme.test at " in str(update["blocks"])
    assert SlackMessage.objects.get().shown_status == "approved"
