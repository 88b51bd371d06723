"""The presenters (approvals/presenters.py) as template filters, under the names the templates use."""

from django import template

from approvals import presenters

register = template.Library()

for _name in (
    "card_title",
    "meter_percent",
    "cap_percent",
    "thousands",
    "point_words",
    "level_hint",
    "pretty_json",
    "duration",
    "waited",
    "decision_line",
    "when",
    "outcome_line",
    "visible",  # every engine-supplied string on a card or in the history
    "visible_lines",
):
    register.filter(_name, getattr(presenters, _name))
