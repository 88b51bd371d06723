"""Web Push: the notice to every browser the workspace's reviewers subscribed (push/services.py).

A `push` contact names no address: it reaches whoever reviews the workspace, on each browser they
subscribed from their account page. The notification's title and body are the presenters' words
(the subject naming the act, `notification_body`), never the arguments or a secret, and a click
opens the request's page behind the normal login.

One delivery, many browsers: a subscription the push service answers 404/410 is dropped at once;
a transient failure (a timeout, 429, 5xx) fails the delivery as any channel's would, to be retried
with the same message — which replaces the one a browser already shows (its tag and Topic are the
request's id) rather than doubling it. A delivery that reached nobody — no browser subscribed,
every one gone, or every one refusing for good — fails for good, naming why.

Like Slack, this needs the database while sending (who is subscribed, dropping the dead), on a
send thread whose connection the sender hands back (contacts.sending).
"""

from contextlib import suppress

from contacts.batch import shared
from contacts.transports.base import Notice, Recipient, TransportError
from people.deciders import decider_ids
from push.models import PushSubscription
from push.services import Message, PushFailed, push_send, subscriptions_for_reviewers
from rules.versions import rule_approver_groups


class PushTransport:
    def notify(self, notice: Notice, recipient: Recipient) -> None:
        workspace_id = notice.workspace_id
        # Read once per outbox batch (contacts.batch); a browser found gone leaves the shared list too.
        everyone = shared(("push_subscriptions", workspace_id), lambda: subscriptions_for_reviewers(workspace_id))
        subscriptions = everyone
        if not subscriptions:
            raise TransportError("no reviewer of the workspace has subscribed a browser to push", permanent=True)
        deciders = _deciders(notice)
        if deciders is not None:
            subscriptions = [s for s in everyone if s.user_id in deciders]
            if not subscriptions:
                raise TransportError(
                    "no member of the rule's approver groups (nor anyone standing in for one) has subscribed a "
                    "browser to push",
                    permanent=True,
                )
        message = message_for(notice)
        reached, gone, failures = 0, [], []
        for subscription in list(subscriptions):  # a copy: another send may drop one meanwhile
            try:
                push_send(subscription=subscription, message=message)
                reached += 1
            except PushFailed as failure:
                if failure.gone:
                    gone.append(failure)
                    PushSubscription.objects.filter(pk=subscription.pk).delete()
                    with suppress(ValueError):  # another send of the batch found it gone first
                        everyone.remove(subscription)
                else:
                    failures.append(failure)
        transient = [f for f in failures if not f.permanent]
        if transient:
            # Sent again to every browser: those that got it see their notification replaced, not doubled.
            retry_after = max((f.retry_after or 0 for f in transient), default=0) or None
            raise TransportError(transient[0].message, retry_after=retry_after)
        if reached:
            return  # a browser that refuses for good does not undo the ones that showed it
        if failures:
            raise TransportError(failures[0].message, permanent=True)
        raise TransportError(
            f"every subscribed browser was gone ({gone[0].message}); the subscriptions were dropped", permanent=True
        )


def _deciders(notice: Notice) -> set[int] | None:
    """Under a rule naming approver groups, only those who may decide are told: the groups' members and their
    live delegates (people/deciders.py). None: every reviewer."""
    row = notice.request
    if row is None or notice.workspace_id is None:
        return None
    groups = rule_approver_groups(config_pk=row.config_id, number=row.config_version, rule_id=row.rule_id)
    return decider_ids(workspace_id=notice.workspace_id, groups=groups) if groups else None


def message_for(notice: Notice) -> Message:
    """The notification: the notice's subject, its one-line body, the page it opens."""
    approval_id = notice.approval["id"] if notice.approval else ""
    return Message(
        title=notice.subject,
        body=notice.body,
        url=notice.review_url or notice.source + "/",
        tag=approval_id or notice.delivery_id,
    )


TRANSPORT = PushTransport()
