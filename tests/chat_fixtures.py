"""Fixtures both chat channels' tests share (tests/integrations for Slack, tests/telegram): each conftest
imports them, so a request to delete posted to Slack and to Telegram is built the same way."""

import pytest

from tests.helpers import deletion_request, make_config


@pytest.fixture
def config(acme):
    return make_config(acme, pass_information_level="summary")


@pytest.fixture
def request_for_deletion(config):
    return deletion_request(config)
