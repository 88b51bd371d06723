"""A user in two workspaces switches between them; staff use the Django admin."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from contacts.models import Contact
from contacts.services import contact_create
from rules.models import Config, ConfigVersion, Rule
from workspaces.models import ApiToken, Membership, Workspace

from ..helpers import make_config, make_member, make_rule, make_token, publish


def test_it_switches_workspace_for_a_user_in_two(acme, globex, alice):
    make_member(globex, "alice@acme.test", "reviewer")
    alice.refresh_from_db()  # member_add set the password again, which changes the session hash
    mine, theirs = make_config(acme, name="Acme agent"), make_config(globex, name="Globex agent")
    client = Client()
    client.force_login(alice)

    response = client.get(reverse("rules:configs"))
    assert response.status_code == 200, response
    page = response.content.decode()
    assert "Acme agent" in page and "Globex agent" not in page and 'id="workspace-switch"' in page
    assert client.get(reverse("rules:rules", args=[theirs.public_id])).status_code == 404

    client.post(reverse("workspaces:switch"), {"workspace": "globex"})
    page = client.get(reverse("rules:configs")).content.decode()
    assert "Globex agent" in page and "Acme agent" not in page
    # In globex alice is a reviewer: read-only, and the server refuses her changes.
    assert "New config" not in page
    assert client.post(reverse("rules:configs"), {"name": "Nope"}).status_code == 403
    assert client.get(reverse("rules:rules", args=[mine.public_id])).status_code == 404

    assert client.post(reverse("workspaces:switch"), {"workspace": "initech"}).status_code == 404


@pytest.mark.parametrize("model", [Workspace, Membership, ApiToken, Config, ConfigVersion, Rule, Contact])
def test_it_loads_the_django_admin_pages_for_staff(acme, alice, model):
    config = make_config(acme)
    make_rule(config)
    contact_create(config=config, name="Leads", channel="none")
    publish(config)
    make_token(acme, engine="e1")
    staff = get_user_model().objects.create_user("staff", "staff@hitl.test", "pw", is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(staff)
    opts = model._meta
    listing = client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist"), {"q": "a"})
    assert listing.status_code == 200
    change = client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[model.objects.first().pk]))
    assert change.status_code == 200
    assert client.get(reverse("admin:index")).status_code == 200


def test_it_keeps_the_django_admin_from_non_staff(alice):
    client = Client()
    client.force_login(alice)
    assert client.get(reverse("admin:index")).status_code == 302
