"""Which `${HITL_…}` variables a workspace's contacts may name: the deployment's environment is shared by
every tenant, so each workspace reaches only what its host gave it (docs/notifications.md, References).

- `HITL_<SLUG>_…` (the slug upper-cased, `-` as `_`) belongs to that workspace. Where two slugs give
  overlapping prefixes (`acme` and `acme-eu` both start `HITL_ACME_`), a name belongs to the longest
  one that fits, and to nobody when two workspaces give the same prefix (`acme-eu`, `acme_eu`).
- Any other name is the host's to grant (`hitl refs grant SLUG NAME…`), one workspace at a time.
- The portal's own settings (`HITL_TELEGRAM_BOT_TOKEN`, `HITL_RECEIPT_KEY`, …) are never a contact's,
  whoever's prefix they fit, and cannot be granted.

`reference_refusal` is the one judgement: contacts.references calls it when a contact is saved or
sent a test, contacts.sending before every send (a contact saved before this rule, or a grant revoked
since, fails its delivery naming the variable). Grants are read from the database each time — a
revoked one stops at once — and shared by one outbox batch at most (contacts.batch).
"""

import re

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Value
from django.db.models.functions import Replace, Upper

from audit.services import SYSTEM, audit_append
from workspaces.models import Workspace

from .batch import shared
from .models import PLACEHOLDER, ReferenceGrant

# Variables the portal reads itself without a setting of the same name (the rest are django.conf.settings'
# HITL_ names); tests/contacts/test_refs.py holds this list to what the code reads.
PORTAL_ENVIRONMENT = frozenset(
    {
        "HITL_ASGI",
        "HITL_BODY_TIMEOUT",
        "HITL_DB_POOL_SIZE",
        "HITL_DB_TRANSACTION_POOLER",
        "HITL_HEADER_TIMEOUT",
        "HITL_LISTEN_DATABASE_URL",
        "HITL_METRICS_TOKEN",
        "HITL_TRUSTED_PROXIES",
        "HITL_VAPID_PRIVATE_KEY",
        "HITL_VAPID_PUBLIC_KEY",
        "HITL_VAPID_SUBJECT",
    }
)
NAME = re.compile(r"^HITL_[A-Z0-9_]+$")


def prefix_of(slug: str) -> str:
    """The variables a workspace owns start with this: `HITL_ACME_EU_` for `acme-eu`."""
    return f"HITL_{slug.upper().replace('-', '_')}_"


def is_portal_variable(name: str) -> bool:
    return name in PORTAL_ENVIRONMENT or (name.startswith("HITL_") and hasattr(settings, name))


def owner_slugs(name: str) -> list[str]:
    """The slugs of the workspaces whose prefix `name` fits most closely (one, or none; several when tied)."""
    parts = name.removeprefix("HITL_").split("_")
    candidates = ["_".join(parts[:n]) for n in range(1, len(parts))]  # something must follow the prefix
    found = (
        Workspace.objects.annotate(prefix=Upper(Replace("slug", Value("-"), Value("_"))))
        .filter(prefix__in=candidates)
        .values_list("slug", "prefix")
    )
    longest = max((len(prefix) for _, prefix in found), default=0)
    return sorted(slug for slug, prefix in found if len(prefix) == longest)


def granted_names(workspace_id: int) -> frozenset[str]:
    return frozenset(ReferenceGrant.objects.filter(workspace_id=workspace_id).values_list("name", flat=True))


def how_to_grant(slug: str, name: str) -> str:
    return f"the host grants it with `python manage.py hitl refs grant {slug} {name}`"


def reference_refusal(*, workspace: Workspace, name: str) -> str | None:
    """Why `workspace` may not resolve the variable `name` ("is not this workspace's to use: … the host
    grants it with …", to follow the name), or None."""
    if is_portal_variable(name):
        return "is one of the portal's own settings: no contact may name it"
    granted = shared(("reference_grants", workspace.pk), lambda: granted_names(workspace.pk))
    owners = shared(("reference_owners", name), lambda: owner_slugs(name))
    if name in granted or owners == [workspace.slug]:
        return None
    return (
        f"is not this workspace's to use: its contacts name its own {prefix_of(workspace.slug)}… variables "
        f"and those the host grants it; {how_to_grant(workspace.slug, name)}"
    )


def _names(names: list[str]) -> list[str]:
    bad = [name for name in names if not NAME.match(name)]
    if bad:
        raise ValidationError(f"{bad[0]} is not a variable's name: HITL_ and upper-case letters, digits or _")
    portal = [name for name in names if is_portal_variable(name)]
    if portal:
        raise ValidationError(f"{portal[0]} is one of the portal's own settings: it cannot be granted")
    return list(dict.fromkeys(names))


@transaction.atomic
def refs_grant(*, workspace: Workspace, names: list[str], actor: str = SYSTEM) -> list[str]:
    """Let `workspace`'s contacts name these variables; returns those newly granted (each audited)."""
    names = _names(names)
    had = granted_names(workspace.pk)
    new = [name for name in names if name not in had]
    ReferenceGrant.objects.bulk_create(
        [ReferenceGrant(workspace=workspace, name=name) for name in new], ignore_conflicts=True
    )
    for name in new:
        audit_append(workspace_id=workspace.pk, actor=actor, action="refs.granted", object=name)
    return new


@transaction.atomic
def refs_revoke(*, workspace: Workspace, names: list[str], actor: str = SYSTEM) -> list[str]:
    """Take grants back; returns the names that were granted (each audited). Their deliveries fail from now on."""
    gone = []
    for name in dict.fromkeys(names):
        deleted, _ = ReferenceGrant.objects.filter(workspace=workspace, name=name).delete()
        if deleted:
            gone.append(name)
            audit_append(workspace_id=workspace.pk, actor=actor, action="refs.revoked", object=name)
    return gone


def contact_names(refs: list[str]) -> list[str]:
    """The variables these references name (what is not a `${HITL_…}` reference names none)."""
    return [found.group(1) for ref in refs if (found := PLACEHOLDER.match(ref or ""))]


def send_refusal(*, workspace: Workspace, refs: list[str]) -> str | None:
    """Before a send: why one of these references may not be resolved for `workspace` (naming it), or None."""
    for name in contact_names(refs):
        if refusal := reference_refusal(workspace=workspace, name=name):
            return f"{name} {refusal}"
    return None
