"""A rule naming approver groups tells only who may decide it: its members' browsers, and their stand-ins'."""

from datetime import timedelta

import pytest
from django.utils import timezone

from contacts.models import Delivery
from contacts.sending import deliveries_send_due
from people import services
from people.models import Delegation
from rules.services import rule_update
from tests.helpers import make_member, publish, register_gate
from tests.loopback import FakeBrowser, push_service  # noqa: F401 — the fixture
from tests.push.conftest import pushed, subscribe, vapid_env  # noqa: F401 — the fixtures

pytestmark = [pytest.mark.django_db(transaction=True)]


def test_push_goes_to_group_members_and_their_delegates_only(pushed, push_service):  # noqa: F811
    acme, alice = pushed["workspace"], pushed["alice"]
    dave = make_member(acme, "dave@acme.test", "reviewer")
    erin = make_member(acme, "erin@acme.test", "reviewer")
    group = services.group_create(workspace=acme, name="Payments", user=alice)
    services.group_member_add(group=group, email="dave@acme.test", user=alice)
    rule_update(rule=pushed["rule"], approver_groups=[group.public_id])
    pushed["version"] = publish(pushed["config"])
    Delegation.objects.create(workspace=acme, delegator=dave, delegate=erin, until=timezone.now() + timedelta(days=1))
    browsers = {name: FakeBrowser(push_service, name) for name in ("bob", "dave", "erin")}
    for user, name in ((pushed["bob"], "bob"), (dave, "dave"), (erin, "erin")):
        subscribe(user, browsers[name])

    approval = register_gate(pushed)
    deliveries_send_due()

    assert len(push_service.messages_to("dave")) == 1 and len(push_service.messages_to("erin")) == 1
    assert push_service.messages_to("bob") == []  # a reviewer outside the group is not asked
    assert Delivery.objects.get(approval=approval, event="requested").status == "sent"
