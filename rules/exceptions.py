"""What config and rule services refuse, in the domain's words (HTTP statuses: common/errors.py)."""

from common.exceptions import DomainError


class ConfigNotFound(DomainError):
    """No such config (or no such version of it) in this workspace; another workspace's reads the same."""

    status = 404
    code = "not_found"

    default_message = "No such config in this workspace."


class RuleNotFound(DomainError):
    """No such rule in this config's draft; another config's rule reads the same."""

    status = 404
    code = "not_found"

    default_message = "No such rule in this config's draft."


class NothingToPublish(DomainError):
    """The draft is the same as the newest version: a new number must mean new content."""

    status = 409
    code = "conflict"

    default_message = "The draft matches the newest version: there is nothing new to publish."


class PlanRequired(DomainError):
    """The workspace's plan does not allow this (Human-in-the-Loop on the Free plan)."""

    status = 403
    code = "plan_required"

    default_message = "Human-in-the-Loop needs a Pro or Enterprise plan."
