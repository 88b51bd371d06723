"""Control and bidi characters in engine text are shown escaped on every surface: CLI, cards, history."""

from io import StringIO

import pytest
from django.core.management import call_command

from approvals.presenters.text import visible
from tests.factories import make_approval
from tests.helpers import make_config

DISGUISED = "prod_db.\u202egnp.tmp_"  # reads as "prod_db._pmt.png" in a bidi-aware terminal or page
REWRITES_THE_LINE = "support-bot\r\x1b[2Kapproved-by-ops"
RAW = ("\u202e", "\r", "\x1b", "\u200b", "\u2066")


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (DISGUISED, "prod_db.\\u202egnp.tmp_"),
        (REWRITES_THE_LINE, "support-bot\\r\\x1b[2Kapproved-by-ops"),
        ("line\nbreak\ttab\x00nul\x7fdel\x85nel", "line\\nbreak\\ttab\\x00nul\\x7fdel\\x85nel"),
        ("zero\u200bwidth \u2066isolate\u2069 \u2028sep \ufeffbom \U000e0041tag", None),
        ("Grüße, 東京 👋 — plain text stays as it is", "Grüße, 東京 👋 — plain text stays as it is"),
        (None, ""),
    ],
)
def test_visible_escapes_control_and_bidi_characters_and_nothing_else(text, shown):
    result = visible(text)

    if shown is not None:
        assert result == shown
    assert result.isprintable() or result == ""


def test_visible_can_keep_line_breaks_for_multi_line_text():
    assert visible("one\ntwo\u202e", keep_newlines=True) == "one\ntwo\\u202e"


@pytest.fixture
def disguised(acme):
    config = make_config(acme, "Support agent")
    return make_approval(
        config,
        target=DISGUISED,
        caller=REWRITES_THE_LINE,
        operation="drop\u200btable",
        run_id="run\x1b[31m",
        level="full",
        summary="Delete \u2066the\u2069 file",
        arguments={"path": DISGUISED},
        message="Careful\u202e",
    )


def test_hitl_pending_prints_engine_text_escaped(disguised):
    out = StringIO()
    call_command("hitl", "pending", stdout=out)
    line = out.getvalue()

    assert "prod_db.\\u202egnp.tmp_" in line
    assert "support-bot\\r\\x1b[2Kapproved-by-ops" in line
    assert not any(char in line for char in RAW)
    assert line.count("\n") == 1


def test_a_card_shows_engine_text_escaped(client, alice, disguised):
    client.force_login(alice)

    html = client.get("/hitl/approvals/").content.decode()

    for shown in ("prod_db.\\u202egnp.tmp_", "drop\\u200btable", "run\\x1b[31m", "Delete \\u2066the\\u2069 file"):
        assert shown in html
    assert "Careful\\u202e" in html
    assert "&quot;path&quot;: &quot;prod_db.\\u202egnp.tmp_&quot;" in html  # the arguments too
    assert not any(char in html for char in RAW)


def test_the_history_shows_engine_text_and_reasons_escaped(client, alice, acme, bob):
    config = make_config(acme, "Support agent")
    make_approval(config, target=DISGUISED, status="rejected", decided_by=bob, reason="no\u202e way")
    client.force_login(alice)

    html = client.get("/hitl/approvals/history/").content.decode()

    assert "prod_db.\\u202egnp.tmp_" in html and "no\\u202e way" in html
    assert not any(char in html for char in RAW)
