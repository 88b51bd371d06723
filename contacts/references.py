"""What a contact's `${HITL_…}` references may name and hold, judged when a contact is saved or sent a test.

Each reference must name a variable the workspace may use (contacts/refs.py). A webhook contact's URL
is then read from its variable, when set, and refused where the portal would not send
(contacts/outbound.py): the admin hears it when saving, not from a failed delivery later. The send
checks both again, since grants and variables change.
"""

import os

from workspaces.models import Workspace

from .models import Channel, reference_name
from .outbound import url_refusal
from .refs import reference_refusal


def reference_refusals(*, workspace: Workspace, channel: str, channel_ref: str, secret_ref: str) -> dict[str, str]:
    """{field: why} for references that name what this contact may not reach; empty when all is well."""
    refusals = {}
    for field, ref in (("channel_ref", channel_ref), ("secret_ref", secret_ref)):
        name = reference_name(ref)
        if name and (refusal := reference_refusal(workspace=workspace, name=name)):
            refusals[field] = f"{field} names {name}, which {refusal}"
    name = reference_name(channel_ref)
    if channel == Channel.WEBHOOK and name and "channel_ref" not in refusals:
        url = os.environ.get(name, "").strip()
        if url and (refusal := url_refusal(url)):
            refusals["channel_ref"] = f"channel_ref names {name}, whose URL {refusal}"
    return refusals
