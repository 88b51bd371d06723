"""GET /.well-known/jwks.json: the public keys receipts are checked against (docs/receipts.md)."""

from django.http import HttpRequest, JsonResponse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.decorators import api_view, authentication_classes, permission_classes
from rest_framework.permissions import AllowAny

from approvals.receipts.keys import jwks

# A client fetches again on a kid it does not know, so a rotation is seen at once whatever this says.
JWKS_MAX_AGE_SECONDS = 300


class JwkSerializer(serializers.Serializer):
    kty = serializers.ChoiceField(choices=["OKP"])
    crv = serializers.ChoiceField(choices=["Ed25519"])
    x = serializers.CharField(help_text="the public key, base64url")
    kid = serializers.CharField(help_text="its RFC 7638 thumbprint, as receipts' `kid` header names it")
    alg = serializers.ChoiceField(choices=["EdDSA"])
    use = serializers.ChoiceField(choices=["sig"])


class JwksSerializer(serializers.Serializer):
    keys = JwkSerializer(many=True, help_text="the current signing key first, then the previous ones")


@extend_schema(
    tags=["engines"],
    operation_id="receipt_keys",
    summary="Receipt keys (JWKS)",
    description="The public keys of receipts: the current one and the previous ones (HITL_RECEIPT_PREVIOUS_KEYS).",
    auth=[],
    responses={200: JwksSerializer},
)
@api_view(["GET"])
@authentication_classes([])
@permission_classes([AllowAny])
def jwks_view(request: HttpRequest) -> JsonResponse:
    response = JsonResponse(jwks())
    response["Cache-Control"] = f"public, max-age={JWKS_MAX_AGE_SECONDS}"
    return response
