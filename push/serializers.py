"""A browser's PushSubscription as PushSubscription.toJSON() gives it, and what we answer."""

from rest_framework import serializers

from common.fields import JsonInput


class KeysSerializer(JsonInput):
    p256dh = serializers.CharField(max_length=200)
    auth = serializers.CharField(max_length=100)


class SubscribeSerializer(JsonInput):
    endpoint = serializers.CharField(max_length=2000)
    keys = KeysSerializer()
    expirationTime = serializers.IntegerField(required=False, allow_null=True)  # noqa: N815 - the browser's name


class UnsubscribeSerializer(serializers.Serializer):
    # Not trimmed: an endpoint that is only blank characters unsubscribes nothing (204) rather than
    # failing as blank.
    endpoint = serializers.CharField(
        max_length=2000, trim_whitespace=False, help_text="the browser's PushSubscription.endpoint"
    )


class SubscriptionSerializer(serializers.Serializer):
    id = serializers.CharField(source="public_id")
    endpoint_host = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()

    def get_endpoint_host(self, subscription) -> str:
        from urllib.parse import urlsplit

        return urlsplit(subscription.endpoint).hostname or ""
