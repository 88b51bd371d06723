"""The Approvals tab's cards, each rendered once for what it shows and kept by this process.

The queue redraws up to QUEUE_LIMIT cards on every refresh of every reviewer's tab, and drawing a
card (presenters.card, then templates/approvals/_card.html) was nearly all of the tab's time
(docs/performance.md). A pending request's card changes only when what it is drawn from changes:
its row, its config's name, its votes and who may still vote, and who is looking. So each card is
rendered once for all of that — the key — and kept; a vote or a rename makes a new key, which
simply misses, and the least recently drawn cards go when the cache is full. What differs on every
render — the request's CSRF token and the "expires in" countdown — is rendered as a marker and
written in per request. The single-card renders (after a decision, a request's own page) draw
_card.html directly, with their notice, error and `next`.
"""

import secrets
import threading
from collections import OrderedDict

from django.middleware.csrf import get_token
from django.template.loader import get_template
from django.urls import get_script_prefix
from django.utils import timezone, translation
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe

from . import presenters
from .models import ApprovalRequest

# Cards kept per process: a queue's worth for each of a few dozen reviewers.
MAX_CARDS = 4000
# Unguessable per process, so no engine text in a card can spell one.
CSRF_MARKER = f"csrf{secrets.token_hex(16)}"
EXPIRES_MARKER = f"expires{secrets.token_hex(16)}"
_ROW = [field.attname for field in ApprovalRequest._meta.concrete_fields]


class CardCache:
    def __init__(self, max_cards: int = MAX_CARDS) -> None:
        self.max_cards = max_cards
        self._cards: OrderedDict[tuple, str] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._cards)

    def clear(self) -> None:
        with self._lock:
            self._cards.clear()

    def cards(self, request, approvals: list[ApprovalRequest], *, reviewers: list[str]) -> list[SafeString]:
        """The queue's cards as HTML for `request`'s user, in the order of `approvals`."""
        template = get_template("approvals/_card.html")
        user = request.user
        # Everything outside the row that the render depends on, the same for every card of the page.
        page = (template.template, getattr(user, "email", ""), translation.get_language())
        page += (timezone.get_current_timezone_name(), get_script_prefix())
        keys = [self._key(page, approval, reviewers) for approval in approvals]
        with self._lock:
            kept = [self._cards.get(key) for key in keys]
            for key, html in zip(keys, kept, strict=True):
                if html is not None:
                    self._cards.move_to_end(key)
        missing = [index for index, html in enumerate(kept) if html is None]
        if missing:
            drawn = presenters.cards([approvals[index] for index in missing], user=user, reviewers=reviewers)
            for index, card in zip(missing, drawn, strict=True):
                card["expires_in"] = EXPIRES_MARKER
                context = {"card": card, "notice": "", "error": "", "next": "", "csrf_token": CSRF_MARKER}
                kept[index] = template.render(context)
            with self._lock:
                for index in missing:
                    self._cards[keys[index]] = kept[index]
                while len(self._cards) > self.max_cards:
                    self._cards.popitem(last=False)
        token = get_token(request)
        return [
            mark_safe(
                html.replace(CSRF_MARKER, token).replace(
                    EXPIRES_MARKER, conditional_escape(presenters.expires_in(approval))
                )
            )
            for approval, html in zip(approvals, kept, strict=True)
        ]

    @staticmethod
    def _key(page: tuple, approval: ApprovalRequest, reviewers: list[str]) -> tuple:
        config = approval.config
        row = repr(tuple(approval.__dict__[name] for name in _ROW))
        if approval.approvals_required > 1:  # a quorum card shows its votes and who may still vote
            votes = tuple((vote.reviewer_email, vote.at, vote.note) for vote in approval.votes.all())
            return (*page, row, config.public_id, config.name, votes, tuple(reviewers))
        return (*page, row, config.public_id, config.name)


rendered_cards = CardCache()
