"""Webhook: a CloudEvents 1.0 JSON body, signed per the Standard Webhooks spec (API.md, Notifications)."""

import json
from datetime import UTC, datetime

import requests
from django.conf import settings
from standardwebhooks.webhooks import Webhook

from contacts.models import reference_name
from contacts.outbound import OutboundRefused, send_timeout, session

from .base import Notice, Recipient, TransportError, resolve


def cloudevent(notice: Notice) -> dict:
    event = {
        "specversion": "1.0",
        "id": notice.delivery_id,
        "source": notice.source,
        "type": f"dev.hitl.approval.{notice.event}",
        "time": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
        "datacontenttype": "application/json",
        "data": {"approval": notice.approval, "review_url": notice.review_url},
    }
    if notice.approval is not None:
        event["subject"] = notice.approval["id"]
    if notice.digest:
        event["data"]["digest"] = notice.digest
    return event


def signed_headers(*, secret: str, msg_id: str, body: str, now: datetime | None = None) -> dict[str, str]:
    """webhook-id / -timestamp / -signature, the signature computed by the `standardwebhooks` library."""
    now = now or datetime.now(UTC)
    try:
        signer = Webhook(secret)
    except Exception:
        # The library's own message could echo the secret: say only what to fix.
        raise TransportError("the signing secret is not a whsec_… base64 value", permanent=True) from None
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": signer.sign(msg_id=msg_id, timestamp=now, data=body),
    }


class WebhookTransport:
    def notify(self, notice: Notice, recipient: Recipient) -> None:
        url = resolve(recipient.channel_ref)
        secret = resolve(recipient.secret_ref, field_name="secret_ref")
        body = json.dumps(cloudevent(notice), separators=(",", ":"), ensure_ascii=False)
        headers = signed_headers(secret=secret, msg_id=notice.delivery_id, body=body)
        headers["content-type"] = "application/cloudevents+json; charset=utf-8"
        timeout = settings.HITL_WEBHOOK_TIMEOUT_SECONDS
        # Messages name the failure, never the URL (requests' own messages contain it).
        try:
            response = session().post(url, data=body.encode(), headers=headers, timeout=send_timeout())
        except OutboundRefused as refused:
            name = reference_name(recipient.channel_ref)
            raise TransportError(f"the URL in {name} {refused.message}", permanent=True) from None
        except requests.Timeout:
            raise TransportError(f"the endpoint did not answer within {timeout} s") from None
        except requests.exceptions.InvalidURL:
            raise TransportError(f"{recipient.channel_ref} does not hold a valid URL", permanent=True) from None
        except (requests.exceptions.MissingSchema, requests.exceptions.InvalidSchema):
            raise TransportError(f"{recipient.channel_ref} does not hold an http(s) URL", permanent=True) from None
        except requests.RequestException:
            raise TransportError("could not connect to the endpoint") from None
        status = response.status_code
        if 200 <= status < 300:
            return
        if status == 429 or status >= 500:
            raise TransportError(f"HTTP {status} from the endpoint")
        if 300 <= status < 400:
            raise TransportError(
                f"HTTP {status} from the endpoint: redirects are not followed, give the variable the final URL",
                permanent=True,
            )
        raise TransportError(f"HTTP {status} from the endpoint", permanent=True)


TRANSPORT = WebhookTransport()
