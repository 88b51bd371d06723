from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

from .models import ApiToken, hash_token


class BearerTokenAuthentication(authentication.BaseAuthentication):
    """`Authorization: Bearer <token>` for user tokens and engine keys, looked up by hash."""

    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        keyword, _, raw = header.partition(" ")
        if keyword.lower() != self.keyword.lower():
            return None
        raw = raw.strip()
        if not raw or " " in raw:
            raise exceptions.AuthenticationFailed("Send the token as `Authorization: Bearer <token>`.")
        try:
            # get(), not first(): on every API request, an ORDER BY costs more to compile than to run.
            token = ApiToken.objects.active().select_related("workspace", "user").get(digest=hash_token(raw))
        except ApiToken.DoesNotExist:
            raise exceptions.AuthenticationFailed("This token is unknown or has been revoked.") from None
        if token.user is not None and not token.user.is_active:
            # A deactivated person's token is worth nothing at once, like a revoked one.
            raise exceptions.AuthenticationFailed("This token's user has been deactivated.")
        # Engines have no Django user; DRF still wants something truthy-safe in request.user.
        return (token.user, token)

    def authenticate_header(self, request) -> str:
        return self.keyword


class BearerTokenScheme(OpenApiAuthenticationExtension):
    """Bearer tokens in /api/schema/: without this the schema claimed only cookie auth, which engines never use."""

    target_class = "workspaces.authentication.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema) -> dict:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An engine key or a user token: `Authorization: Bearer <token>`.",
        }
