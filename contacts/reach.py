"""Can a rule's requests reach anyone? Its contacts' variables, read in this process's environment.

The Rules tab flags a rule whose contacts all lack their variables before it is published: such a
rule's requests would tell nobody (and under `on_unreachable: "reject"` end as undeliverable,
approvals/expiry/undeliverable.py). Only whether a variable is set is read, never its value.
"""

import os

from .models import Channel, Contact, reference_name


def missing_variables(contact: Contact) -> list[str]:
    """The HITL_ variables this contact needs that are unset here (a `none` contact reaches nobody: [its kind])."""
    if contact.channel == Channel.NONE:
        return ["(channel none)"]
    refs = [contact.channel_ref] + ([contact.secret_ref] if contact.channel == Channel.WEBHOOK else [])
    missing = []
    for ref in refs:
        name = reference_name(ref)
        if name is None:
            missing.append(ref or "(no reference)")
        elif not os.environ.get(name, "").strip():
            missing.append(name)
    return missing


def unreachable_warning(rule, contacts: list[Contact]) -> dict | None:
    """Why nobody would be told of this rule's requests — {"text", "variables": the unset HITL_ names} —
    or None when some contact can be reached."""
    named = list(dict.fromkeys([*(rule.notify or []), *(rule.escalate_to or [])]))
    by_id = {contact.public_id: contact for contact in contacts}
    chosen = [by_id[i] for i in named if i in by_id]
    if not chosen:
        if getattr(rule, "on_unreachable", "wait") == "reject":
            return {
                "text": "Nobody can be told of this rule's requests: it names no contact, so each one ends as "
                "undeliverable unless someone opens it in time.",
                "variables": [],
            }
        return None
    missing = [missing_variables(contact) for contact in chosen]
    if all(missing):
        names = sorted({name for names in missing for name in names if name.startswith("HITL_")})
        return {
            "text": "Nobody can be told of this rule's requests: none of its contacts has its variables set here. "
            "Set them in the portal's environment before publishing" + (":" if names else "."),
            "variables": names,
        }
    return None
