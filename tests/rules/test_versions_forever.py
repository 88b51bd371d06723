"""Published versions, their publishers and approval history are never deleted: admin, ORM or SQL."""

import pytest
from django.db import DatabaseError, connection, transaction
from django.db.models import ProtectedError

from approvals.models import ApprovalRequest
from rules.models import Config, ConfigVersion
from tests.factories import make_approval
from tests.helpers import change_draft, make_config, make_rule, publish


@pytest.fixture
def support(acme):
    config = make_config(acme, "Support agent")
    make_rule(config, kind="delete", match="*")
    return config


def test_the_database_refuses_to_delete_a_published_version(support, alice):
    version = publish(support, alice)

    with pytest.raises(DatabaseError, match="never changes"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM rules_configversion WHERE id = %s", [version.pk])

    assert ConfigVersion.objects.filter(pk=version.pk).exists()


def test_the_admin_offers_no_delete_for_a_version_and_numbers_are_never_reused(admin_client, support, alice):
    first = publish(support, alice, note="first")

    page = admin_client.get(f"/admin/rules/configversion/{first.pk}/delete/")
    bulk = admin_client.post(
        "/admin/rules/configversion/", {"action": "delete_selected", "_selected_action": [first.pk], "post": "yes"}
    )
    with pytest.raises(TypeError, match="never deleted"):
        first.delete()
    with pytest.raises(TypeError, match="never deleted"):
        ConfigVersion.objects.filter(pk=first.pk).delete()

    assert page.status_code == 403
    assert bulk.status_code in (200, 302)
    assert ConfigVersion.objects.filter(pk=first.pk).exists()
    change_draft(support)
    assert publish(support, alice, note="second").number == 2


def test_the_admin_refuses_to_delete_a_config_with_versions_or_history(admin_client, support, alice):
    publish(support, alice)
    make_approval(support)

    response = admin_client.post(f"/admin/rules/config/{support.pk}/delete/", {"post": "yes"})

    assert response.status_code == 200  # Django's "cannot delete: protected objects" page
    assert b"Cannot delete config" in response.content
    assert Config.objects.filter(pk=support.pk).exists()
    assert ApprovalRequest.objects.filter(config=support).count() == 1


def test_the_admin_offers_no_delete_for_an_approval_request(admin_client, support, bob):
    approval = make_approval(support, status="approved", decided_by=bob)

    response = admin_client.post(f"/admin/approvals/approvalrequest/{approval.pk}/delete/", {"post": "yes"})

    assert response.status_code == 403
    assert ApprovalRequest.objects.filter(pk=approval.pk).exists()


def test_a_user_who_published_is_deactivated_not_deleted(admin_client, support, alice, django_user_model):
    publish(support, alice)

    page = admin_client.get(f"/admin/auth/user/{alice.pk}/delete/")
    response = admin_client.post(f"/admin/auth/user/{alice.pk}/delete/", {"post": "yes"})

    assert page.status_code == 200
    assert "Deactivate them instead" in page.content.decode()
    assert response.status_code == 200
    assert django_user_model.objects.filter(pk=alice.pk).exists()
    with pytest.raises(ProtectedError):
        alice.delete()


def test_a_user_who_decided_cannot_be_deleted(support, bob, django_user_model):
    make_approval(support, status="approved", decided_by=bob)

    with pytest.raises(ProtectedError):
        bob.delete()

    assert django_user_model.objects.filter(pk=bob.pk).exists()


def test_a_user_who_never_published_or_decided_can_still_be_deleted(admin_client, acme, django_user_model):
    from tests.helpers import make_member

    dave = make_member(acme, "dave@acme.test", "reviewer")

    response = admin_client.post(f"/admin/auth/user/{dave.pk}/delete/", {"post": "yes"})

    assert response.status_code == 302
    assert not django_user_model.objects.filter(pk=dave.pk).exists()
