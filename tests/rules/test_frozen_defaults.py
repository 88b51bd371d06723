"""A version published before notifications, the approver policy and secret references existed
reads as their defaults everywhere: the versions API, the served gates, registration, the pages."""

from django.test import Client
from django.urls import reverse
from django.utils import timezone

from contacts.services import contact_create
from rules.models import ConfigVersion
from rules.vocabulary import FROZEN_CONTACT_DEFAULTS, FROZEN_RULE_DEFAULTS
from tests.approvals.engine_support import gate_body

from ..helpers import make_config, make_rule


def test_the_oldest_version_shape_reads_as_the_defaults_in_api_gates_registration_and_pages(
    alice_api, engine_api, acme, alice
):
    config = make_config(acme, pass_information_level="full")
    rule = make_rule(config, message="Deletes need a second pair of eyes")
    contact = contact_create(config=config, name="Leads", channel="none")
    # As the first versions were frozen: none of the keys added since.
    ConfigVersion.objects.create(
        config=config,
        number=1,
        published_at=timezone.now(),
        rules=[{k: v for k, v in rule.frozen().items() if k not in FROZEN_RULE_DEFAULTS}],
        contacts=[{k: v for k, v in contact.frozen().items() if k not in FROZEN_CONTACT_DEFAULTS}],
        token_caps=config.token_caps,
        pass_information_level=config.pass_information_level,
    )

    version = alice_api.get(f"/api/v1/configs/{config.public_id}/versions/1").json()
    assert version["rules"] == [rule.frozen()]  # nobody to tell, one approval, four eyes, no grants
    assert version["contacts"] == [contact.frozen()]  # no secret reference
    served = engine_api.get(f"/api/v1/configs/{config.public_id}/served").json()
    assert served["gates"] == [{**rule.frozen(), "match_field": "operation"}]  # a delete rule matches the operation
    registered = engine_api.post("/api/v1/approvals", gate_body(config))
    assert registered.status_code == 201, registered.text
    assert registered.json()["approvals_required"] == 1

    page = Client()
    page.force_login(alice)
    tab = page.get(reverse("rules:rules", args=[config.public_id])).content.decode()
    assert "draft matches v1" in tab  # the draft holds the same rule and contact at their defaults
    html = page.get(reverse("rules:version", args=[config.public_id, 1])).content.decode()
    assert '<td class="policy">1 approval · four eyes</td>' in html
