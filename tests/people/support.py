"""A world for the people tests: a config whose published rule names an approver group."""

from approvals.models import ApprovalRequest
from people import services
from tests.factories import make_approval
from tests.helpers import make_config, make_member, make_rule, publish


def group_world(acme, alice, *, approvals_required: int = 1, **rule_fields) -> dict:
    """`Payments` holds dave; bob is a reviewer outside it; the rule lets only Payments decide."""
    dave = make_member(acme, "dave@acme.test", "reviewer")
    group = services.group_create(workspace=acme, name="Payments", user=alice)
    services.group_member_add(group=group, email="dave@acme.test", user=alice)
    config = make_config(acme, "Payments agent", pass_information_level="full")
    rule = make_rule(config, approver_groups=[group.public_id], approvals_required=approvals_required, **rule_fields)
    publish(config, user=alice)
    return {"dave": dave, "group": group, "config": config, "rule": rule}


def grouped_approval(world: dict, **fields) -> ApprovalRequest:
    return make_approval(world["config"], rule_id=world["rule"].public_id, version=1, **fields)
