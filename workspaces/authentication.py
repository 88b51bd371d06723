from typing import TYPE_CHECKING

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from common.listened import ListenedCache

from .models import ApiToken, hash_token

if TYPE_CHECKING:  # imported for real, drf_spectacular.openapi would import DRF's views, which load this module
    from drf_spectacular.openapi import AutoSchema


# Engine keys by digest (only engine keys: a person's token also depends on their membership and
# whether they are still active). A key revoked or deleted, or its workspace changed (its plan), is
# a NOTIFY on `hitl_tokens` (triggers: workspaces/migrations/0002), which empties the cache: a
# revocation still takes effect at once.
engine_keys = ListenedCache()


def token_for_authorization(header: bytes | str | None) -> ApiToken | None:
    """The live token behind an `Authorization: Bearer <token>` header; None for no Bearer header at all.

    The one Bearer parser: DRF's authentication below and the edge (edge/calls.py) both ask it.
    Raises AuthenticationFailed for a malformed, unknown or revoked token, or a deactivated user's.
    """
    if isinstance(header, bytes):
        header = header.decode("latin-1")
    if not header:
        return None
    keyword, _, raw = header.partition(" ")
    if keyword.lower() != BearerTokenAuthentication.keyword.lower():
        return None
    raw = raw.strip()
    if not raw or " " in raw:
        raise exceptions.AuthenticationFailed("Send the token as `Authorization: Bearer <token>`.")
    digest = hash_token(raw)
    token = engine_keys.get(digest)
    if token is not None:
        return token
    generation = engine_keys.generation
    try:
        # get(), not first(): on every API request, an ORDER BY costs more to compile than to run.
        token = ApiToken.objects.active().select_related("workspace", "user").get(digest=digest)
    except ApiToken.DoesNotExist:
        raise exceptions.AuthenticationFailed("This token is unknown or has been revoked.") from None
    if token.is_engine:
        engine_keys.put(digest, token, generation)
    if token.user is not None and not token.user.is_active:
        # A deactivated person's token is worth nothing at once, like a revoked one.
        raise exceptions.AuthenticationFailed("This token's user has been deactivated.")
    return token


class BearerTokenAuthentication(authentication.BaseAuthentication):
    """`Authorization: Bearer <token>` for user tokens and engine keys, looked up by hash."""

    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[AbstractBaseUser | AnonymousUser, ApiToken] | None:
        token = token_for_authorization(authentication.get_authorization_header(request))
        if token is None:
            return None
        # Engines have no Django user; DRF still wants something truthy-safe in request.user.
        return (token.user, token)

    def authenticate_header(self, request: Request) -> str:
        return self.keyword


class BearerTokenScheme(OpenApiAuthenticationExtension):
    """Bearer tokens in /api/schema/: without this the schema claimed only cookie auth, which engines never use."""

    target_class = "workspaces.authentication.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema: "AutoSchema") -> dict:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An engine key or a user token: `Authorization: Bearer <token>`.",
        }
