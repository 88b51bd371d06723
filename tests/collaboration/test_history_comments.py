"""History shows each request's comment count, read in the page's own query (docs/collaboration.md)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from approvals.models import Status
from collaboration.services import comment_add
from tests.factories import make_many
from tests.helpers import make_config

pytestmark = pytest.mark.django_db

HISTORY = "/hitl/approvals/history/"


@pytest.fixture
def support(acme):
    return make_config(acme, "Support agent", pass_information_level="full")


def row_of(html: str, public_id: str) -> str:
    start = html.index(f'id="row-{public_id}"')
    return html[start : html.index("</tr>", start)]


def test_each_row_shows_its_comment_count_at_no_query_more(client, alice, bob, support):
    quiet, talked, once = make_many(support, 3, status=Status.APPROVED, decided_by_email="alice@acme.test")
    client.force_login(bob)

    def page() -> tuple[str, int]:
        with CaptureQueriesContext(connection) as queries:
            response = client.get(HISTORY)
        assert response.status_code == 200
        return response.content.decode(), len(queries)

    page()  # the first read warms what every page caches
    _, without_comments = page()
    for text in ("Why this customer?", "Because they asked <b>twice</b>."):
        comment_add(approval=talked, user=bob if "Why" in text else alice, text=text)
    comment_add(approval=once, user=bob, text="Checked.")
    html, with_comments = page()
    assert with_comments == without_comments
    assert "2 comments" in row_of(html, talked.public_id)
    assert "1 comment<" in row_of(html, once.public_id)
    assert "comment" not in row_of(html, quiet.public_id).replace("comment-count", "")
    assert "<b>twice" not in html  # the count, not the text, is on History
