"""The Approvals tab's cards, each rendered once for what it shows and kept by this process.

The queue redraws up to QUEUE_LIMIT cards on every refresh of every reviewer's tab, and drawing a
card (presenters/card.py, then templates/approvals/_card.html) was nearly all of the tab's time
(docs/performance.md). A pending request's card changes only when what it is drawn from changes:
its row, its config's name, its votes and who may still vote, and who is looking. So each card is
rendered once for all of that — the key, read as row versions with the queue itself
(selectors.pending_queue) — and kept; a vote or a rename makes a new key, which
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

from approvals.presenters import card as card_presenter
from approvals.review import selectors
from approvals.review.selectors import QueueEntry

# Cards kept per process: a queue's worth for each of a few dozen reviewers.
MAX_CARDS = 4000
# Unguessable per process, so no engine text in a card can spell one.
CSRF_MARKER = f"csrf{secrets.token_hex(16)}"
EXPIRES_MARKER = f"expires{secrets.token_hex(16)}"


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

    def cards(
        self, request, entries: list[QueueEntry], *, workspace, reviewers: list[str], strips: dict | None = None
    ) -> list[SafeString]:
        """The queue's cards as HTML for `request`'s user, in the order of `entries`; only the new ones drawn.

        strips: HTML to place after a card (by pk), drawn per request, never kept (approvals/extensions.py).
        """
        strips = strips or {}
        template = get_template("approvals/_card.html")
        user = request.user
        # Everything outside the request that the render depends on, the same for every card of the page.
        page = (template.template, getattr(user, "email", ""), translation.get_language())
        page += (timezone.get_current_timezone_name(), get_script_prefix())
        who_may_vote = tuple(reviewers)
        keys = {entry.pk: self._key(page, entry, who_may_vote) for entry in entries}
        with self._lock:
            kept = {pk: self._kept(key) for pk, key in keys.items()}
        missing = [pk for pk, html in kept.items() if html is None]
        if missing:
            drawn = selectors.queue_cards_to_draw(workspace=workspace, pks=missing)
            cards = card_presenter.cards([approval for _, approval in drawn], user=user, reviewers=reviewers)
            for (entry, _), card in zip(drawn, cards, strict=True):
                card["expires_in"] = EXPIRES_MARKER
                context = {"card": card, "notice": "", "error": "", "next": "", "csrf_token": CSRF_MARKER}
                kept[entry.pk] = template.render(context)
            with self._lock:
                for entry, _ in drawn:
                    self._cards[self._key(page, entry, who_may_vote)] = kept[entry.pk]
                while len(self._cards) > self.max_cards:
                    self._cards.popitem(last=False)
        token = get_token(request)
        return [
            mark_safe(
                html.replace(CSRF_MARKER, token).replace(
                    EXPIRES_MARKER, conditional_escape(card_presenter.expires_in(entry.expires_at))
                )
                + conditional_escape(strips.get(entry.pk, ""))
            )
            for entry in entries
            # None: decided (or expired) between reading the queue and drawing its new cards
            if (html := kept[entry.pk]) is not None
        ]

    def _kept(self, key: tuple) -> str | None:
        html = self._cards.get(key)
        if html is not None:
            self._cards.move_to_end(key)
        return html

    @staticmethod
    def _key(page: tuple, entry: QueueEntry, reviewers: tuple) -> tuple:
        key = (*page, entry.pk, *entry.drawn_from)
        # Only a quorum card shows who may still vote: the others are kept whoever joins or leaves.
        return (*key, reviewers) if entry.quorum else key


rendered_cards = CardCache()
