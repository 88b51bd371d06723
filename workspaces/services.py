"""Writes for workspaces, members and tokens: used by the CLI, Django admin and tests alike."""

from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.utils import timezone

from audit.services import SYSTEM, audit_append

from .models import HINT_RANDOM_CHARS, ApiToken, Membership, Plan, Role, TokenKind, Workspace, hash_token

User = get_user_model()


def workspace_create(*, slug: str, plan: str = Plan.FREE, name: str = "") -> Workspace:
    return Workspace.objects.create(slug=slug, name=name or slug.replace("-", " ").title(), plan=plan)


@transaction.atomic
def workspace_set_plan(*, workspace: Workspace, plan: str, actor: str = SYSTEM) -> Workspace:
    """Staff change a plan (CLI, Django admin); the log names them, or `system` for the host's CLI."""
    before = Workspace.objects.select_for_update().values_list("plan", flat=True).get(pk=workspace.pk)
    workspace.plan = plan
    workspace.save(update_fields=["plan"])
    audit_append(
        workspace_id=workspace.pk,
        actor=actor,
        action="workspace.plan_changed",
        object=workspace.slug,
        data={"from": before, "to": plan},
    )
    return workspace


@transaction.atomic
def member_add(
    *, workspace: Workspace, email: str, role: str, password: str | None = None, actor: str = SYSTEM
) -> Membership:
    """Add (or re-role) a member, creating the user if this email is new.

    The email must be an address (Django's EmailValidator, as the admin's forms hold it: it lands
    in pages, messages and the audit export) and a password is held to Django's validators
    (AUTH_PASSWORD_VALIDATORS): raises django.core.exceptions.ValidationError keyed by field.
    """
    email = User.objects.normalize_email(email.strip()).lower()
    try:
        validate_email(email)
    except ValidationError:
        raise ValidationError({"email": f"{email!r} is not an email address (name@example.com)."}) from None
    user = User.objects.filter(email__iexact=email).first()
    if password:
        try:
            validate_password(password, user=user or User(username=email, email=email))
        except ValidationError as error:
            raise ValidationError({"password": "That password is refused: " + " ".join(error.messages)}) from None
    if user is None:
        user = User.objects.create_user(username=email, email=email, password=password)
    elif password:
        user.set_password(password)
        user.save(update_fields=["password"])
    membership, created = Membership.objects.update_or_create(user=user, workspace=workspace, defaults={"role": role})
    audit_append(
        workspace_id=workspace.pk,
        actor=actor,
        action="member.changed",
        object=email,
        data={"change": "added" if created else "role_set", "role": role},
    )
    return membership


@transaction.atomic
def token_create(
    *, workspace: Workspace, user: AbstractBaseUser | None = None, engine_name: str = "", actor: str = SYSTEM
) -> tuple[ApiToken, str]:
    """Create a token and return it with its raw value, which is never available again."""
    if (user is None) == (not engine_name):
        raise ValueError("A token is either a user's or an engine's")
    raw = ApiToken.generate()
    token = ApiToken.objects.create(
        workspace=workspace,
        kind=TokenKind.USER if user else TokenKind.ENGINE,
        user=user,
        name=engine_name,
        digest=hash_token(raw),
        hint=raw[: len(ApiToken.PREFIX) + HINT_RANDOM_CHARS],
    )
    audit_append(
        workspace_id=workspace.pk, actor=actor, action="token.created", object=token.hint, data=_token_data(token)
    )
    return token, raw


def _token_data(token: ApiToken) -> dict:
    # The hint (first characters) names the token; its digest and value never enter the log.
    return {"kind": token.kind, "engine": token.name, "user": token.user.email if token.user_id else ""}


@transaction.atomic
def token_revoke(*, token: ApiToken, actor: str = SYSTEM) -> ApiToken:
    revoked = ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
    token.refresh_from_db(fields=["revoked_at"])
    if revoked:
        audit_append(
            workspace_id=token.workspace_id,
            actor=actor,
            action="token.revoked",
            object=token.hint,
            data=_token_data(token),
        )
    return token


__all__ = ["Role", "member_add", "token_create", "token_revoke", "workspace_create", "workspace_set_plan"]
