"""Who may decide a request beyond their role: approver groups and delegations, checked in one place.

`approval_decide` calls `decider_check` before anything else, so every channel that decides (page, API,
CLI, Slack, Telegram, an email link, push) answers the same 403 `not_an_approver`. A rule without
groups lets every reviewer decide. With groups, a member decides on their own behalf; a live delegate
of a member decides on that member's behalf (`on_behalf_of`). A delegate never approves what one of
its delegators requested (four eyes, whoever the decision would be recorded for).
"""

from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth.base_user import AbstractBaseUser

from people.exceptions import NotAnApprover
from people.selectors import delegate_ids_for, delegators_of, group_member_ids, group_names


@dataclass(frozen=True)
class Decider:
    on_behalf_of: str  # the delegator's email when the delegation is what lets this person decide; else ""
    stands_in_for: tuple[str, ...]  # every delegator's email (four eyes: none of their requests is approved)

    def requested_by_delegator(self, requested_by: str) -> bool:
        wanted = (requested_by or "").casefold()
        return bool(wanted) and any(email.casefold() == wanted for email in self.stands_in_for)


def decider_check(
    *, workspace_id: int, user: AbstractBaseUser, groups: list[str], now: datetime | None = None
) -> Decider:
    """Who this person decides as, under a rule naming `groups` (empty: any reviewer); NotAnApprover if nobody."""
    delegators = delegators_of(workspace_id=workspace_id, user_id=getattr(user, "pk", None), now=now)
    stands_in_for = tuple(email for _, email in delegators)
    if not groups:
        return Decider(on_behalf_of="", stands_in_for=stands_in_for)
    members = group_member_ids(workspace_id=workspace_id, ids=groups)
    if user.pk in members:
        return Decider(on_behalf_of="", stands_in_for=stands_in_for)
    for delegator_id, email in delegators:
        if delegator_id in members:
            return Decider(on_behalf_of=email, stands_in_for=stands_in_for)
    raise NotAnApprover(
        f"Only members of {', '.join(group_names(workspace_id=workspace_id, ids=groups))} may decide this request "
        "(its rule's approver groups). Ask one of them, or an admin to add you to a group."
    )


def decider_ids(*, workspace_id: int, groups: list[str]) -> set[int]:
    """Who may decide under `groups`: their members and whoever stands in for one right now (whom a rule's
    notifications reach)."""
    members = group_member_ids(workspace_id=workspace_id, ids=groups)
    return members | delegate_ids_for(workspace_id=workspace_id, delegator_ids=members)


def may_decide_groups(*, workspace_id: int, user: AbstractBaseUser, groups: list[str]) -> bool:
    """The same answer as a yes/no, for hiding buttons a person may not use."""
    try:
        decider_check(workspace_id=workspace_id, user=user, groups=groups)
    except NotAnApprover:
        return False
    return True
