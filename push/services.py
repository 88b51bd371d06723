"""Web Push: saving the browsers reviewers subscribe, and sending one message to one of them.

`push_subscription_save` / `push_subscription_delete` are called by the account page's script
(through push.api); `push_send` by the `push` contact channel (push/transport.py),
which decides what a result means for the delivery. The message is encrypted to the browser's
keys (RFC 8291, aes128gcm) and signed with the portal's VAPID key (RFC 8292) by `pywebpush`.
"""

import json
from dataclasses import dataclass
from urllib.parse import urlsplit

import requests
from django.conf import settings
from django.db import transaction
from django.templatetags.static import static
from py_vapid import Vapid02
from pywebpush import WebPushException, webpush

from contacts.outbound import OutboundRefused, send_timeout, session, url_refusal

from . import vapid
from .models import PushSubscription

# A person with more browsers than this is unusual; the cap bounds what one notice fans out to.
SUBSCRIPTIONS_PER_USER = 20
# What a push service keeps a message for a browser that is offline: a request waits hours, not days.
TTL_SECONDS = 12 * 3600
# What a push service accepts (4 KiB less the encryption's overhead) with room to spare.
TITLE_MAX = 200
BODY_MAX = 600


class SubscriptionRefused(ValueError):
    """What the browser sent is not a subscription we can write to; `field` names what is wrong."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def endpoint_error(endpoint: str) -> str | None:
    parts = urlsplit(endpoint)
    allowed = ("https", "http") if settings.HITL_PUSH_ALLOW_HTTP else ("https",)
    if parts.scheme not in allowed or not parts.hostname:
        return "endpoint must be the https URL of a push service, as PushSubscription.endpoint gives it"
    if refusal := url_refusal(endpoint):
        return f"endpoint {refusal}"
    return None


def keys_error(p256dh: str, auth: str) -> tuple[str, str] | None:
    try:
        point = vapid.b64url_decode(p256dh)
    except ValueError:
        point = b""
    if len(point) != 65 or point[0] != 4:
        return "keys.p256dh", "keys.p256dh must be the browser's P-256 public key (65 bytes, base64url)"
    try:
        secret = vapid.b64url_decode(auth)
    except ValueError:
        secret = b""
    if len(secret) != 16:
        return "keys.auth", "keys.auth must be the browser's 16-byte auth secret, base64url"
    return None


@transaction.atomic
def push_subscription_save(
    *, workspace, user, endpoint: str, p256dh: str, auth: str, user_agent: str = ""
) -> tuple[PushSubscription, bool]:
    """Subscribe this browser for `user` in `workspace`; the same endpoint again replaces its keys."""
    endpoint, p256dh, auth = endpoint.strip(), p256dh.strip(), auth.strip()
    if error := endpoint_error(endpoint):
        raise SubscriptionRefused("endpoint", error)
    if refused := keys_error(p256dh, auth):
        raise SubscriptionRefused(*refused)
    mine = PushSubscription.objects.filter(workspace=workspace, user=user)
    existing = PushSubscription.objects.filter(workspace=workspace, endpoint=endpoint).first()
    if existing is None and mine.count() >= SUBSCRIPTIONS_PER_USER:
        raise SubscriptionRefused(
            "endpoint", f"You have {SUBSCRIPTIONS_PER_USER} browsers subscribed: unsubscribe one you no longer use"
        )
    fields = {"user": user, "p256dh": p256dh, "auth": auth, "user_agent": user_agent[:300]}
    # An endpoint is one browser profile: whoever subscribes it now is who it notifies.
    subscription, created = PushSubscription.objects.update_or_create(
        workspace=workspace, endpoint=endpoint, defaults=fields
    )
    return subscription, created


def push_subscription_delete(*, workspace, user, endpoint: str) -> bool:
    """Unsubscribe the browser; False when it was not subscribed (for this user, in this workspace)."""
    deleted, _ = PushSubscription.objects.filter(workspace=workspace, user=user, endpoint=endpoint.strip()).delete()
    return bool(deleted)


def subscriptions_for_reviewers(workspace_id: int) -> list[PushSubscription]:
    """Every browser subscribed by someone who still reviews the workspace (a member, active)."""
    return list(
        PushSubscription.objects.filter(
            workspace_id=workspace_id, user__is_active=True, user__memberships__workspace_id=workspace_id
        ).order_by("pk")
    )


@dataclass(frozen=True)
class Message:
    """What the service worker shows: a notification's title and body, and the page a click opens."""

    title: str
    body: str
    url: str
    tag: str  # one notification per request on the device: a later message replaces it

    def payload(self) -> str:
        icon = static("icons/icon-192.png")
        return json.dumps(
            {
                "title": self.title[:TITLE_MAX],
                "body": self.body[:BODY_MAX],
                "url": self.url,
                "tag": self.tag,
                "icon": icon,
            },
            separators=(",", ":"),
            ensure_ascii=False,
        )


class PushFailed(Exception):
    """The push service did not take the message. `gone`: it answered 404/410, the subscription is
    dead and is dropped; `permanent`: sending again cannot help. Messages name a status, never the endpoint."""

    def __init__(self, message: str, *, gone: bool = False, permanent: bool = False, retry_after: int | None = None):
        super().__init__(message)
        self.message = message
        self.gone = gone
        self.permanent = permanent or gone
        self.retry_after = retry_after


def push_send(*, subscription: PushSubscription, message: Message) -> None:
    """Encrypt and post `message` to the subscription's push service, or raise PushFailed."""
    try:
        signer = Vapid02(private_key=vapid.private_key())
    except vapid.VapidError as error:
        raise PushFailed(str(error), permanent=True) from None
    headers = {"Urgency": "high"}
    if _topic_ok(message.tag):
        headers["Topic"] = message.tag  # a push service replaces a message not yet delivered with the same topic
    try:
        webpush(
            subscription_info=subscription.info(),
            data=message.payload(),
            vapid_private_key=signer,
            vapid_claims={"sub": vapid.subject()},
            ttl=TTL_SECONDS,
            timeout=send_timeout(),
            headers=headers,
            requests_session=session(),
        )
    except WebPushException as error:
        response = error.response
        if response is None:  # the stored keys were refused before anything was sent
            raise PushFailed("the subscription's keys are unusable", gone=True) from None
        status = response.status_code
        if status in (404, 410):
            raise PushFailed(f"HTTP {status} from the push service: the subscription is gone", gone=True) from None
        if status == 429 or status >= 500:
            raise PushFailed(f"HTTP {status} from the push service", retry_after=_retry_after(response)) from None
        if status in (401, 403):
            raise PushFailed(
                f"HTTP {status} from the push service: it refused our VAPID signature (HITL_VAPID_PRIVATE_KEY, "
                "HITL_VAPID_SUBJECT)",
                permanent=True,
            ) from None
        raise PushFailed(f"HTTP {status} from the push service", permanent=True) from None
    except OutboundRefused as refused:
        raise PushFailed(f"the subscription's endpoint {refused.message}", permanent=True) from None
    except requests.Timeout:
        raise PushFailed("the push service did not answer in time") from None
    except requests.RequestException:
        raise PushFailed("could not connect to the push service") from None
    except Exception as error:  # py_vapid refuses a bad subject with its own exception
        if "sub" in str(error):
            raise PushFailed("HITL_VAPID_SUBJECT must be a mailto: address or an https: URL", permanent=True) from None
        raise


def _topic_ok(tag: str) -> bool:
    # RFC 8030 § 5.4: at most 32 characters of the base64url alphabet.
    return 0 < len(tag) <= 32 and all(c.isascii() and (c.isalnum() or c in "-_") for c in tag)


def _retry_after(response: requests.Response) -> int | None:
    value = response.headers.get("Retry-After", "")
    return int(value) if value.isdigit() else None
