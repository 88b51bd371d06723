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
        token = ApiToken.objects.active().select_related("workspace", "user").filter(digest=hash_token(raw)).first()
        if token is None:
            raise exceptions.AuthenticationFailed("This token is unknown or has been revoked.")
        # Engines have no Django user; DRF still wants something truthy-safe in request.user.
        return (token.user, token)

    def authenticate_header(self, request) -> str:
        return self.keyword
