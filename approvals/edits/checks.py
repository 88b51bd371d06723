"""Approve with edits (docs/api.md): the one place its rules live.

- a registration's `arguments_schema`: a JSON Schema (draft 2020-12) of the arguments, at most 16 KiB;
- a reviewer's edited arguments: allowed only where the frozen rule says `allow_edit`, checked as JSON
  the portal can store and against the schema, each failure named by its path (`arguments.amount_cents`);
- the digests: the approved call's (`decision.call_digest`) and whether what the engine reported
  running matches it.

The decide service, the API, the card's live check and every page and message call these; none of
them words a rule of their own.
"""

import difflib
import functools
import json
from dataclasses import dataclass

import re2
from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import SchemaError, ValidationError
from referencing import Registry
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012

from approvals.engine.digest import call_digest
from approvals.exceptions import EditedArgumentsInvalid, EditNotAllowed
from approvals.models import ApprovalKind, ApprovalRequest

MAX_SCHEMA_BYTES = 16 * 1024
MAX_ARGUMENTS_BYTES = 64 * 1024
FINITE = "arguments must be JSON with finite numbers only (a number like 1e400 overflows to Infinity)."
# A message quotes the offending value; a long one would flood the card and the error envelope.
MESSAGE_MAX = 300
# The card shows this many schema errors at once (the API names every path in `fields`).
ERRORS_SHOWN = 20


# The schema's regular expressions run on RE2 (linear time), not Python's backtracking `re`: a pattern
# the engine wrote (`^(a+)+$`) must not hold a worker for minutes over a reviewer's edit or the proposal.
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a pattern RE2 refuses is the engine's 400, not a line in our log


@functools.lru_cache(maxsize=512)
def _regex(pattern: str):
    return re2.compile(pattern, options=_RE2_OPTIONS)


def _matches(pattern: str, text: str) -> bool:
    try:
        return _regex(pattern).search(text) is not None
    except re2.error:
        return False  # refused at registration; should one slip through, it fails closed (no match)


def _pattern(validator, pattern, instance, schema):
    if validator.is_type(instance, "string") and not _matches(pattern, instance):
        yield ValidationError(f"{_short(repr(instance))} does not match {pattern!r}")


def _pattern_properties(validator, patterns, instance, schema):
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _matches(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


# Draft 2020-12 with its two regular-expression keywords on RE2; every check below uses it.
ArgumentsValidator = validators.extend(
    Draft202012Validator, {"pattern": _pattern, "patternProperties": _pattern_properties}
)


# The schema, at registration ---------------------------------------------------------------------


def arguments_schema_problem(schema: object) -> str | None:
    """Why `schema` cannot be a registration's `arguments_schema`, or None when it can."""
    if not isinstance(schema, dict | bool):
        return "arguments_schema must be a JSON Schema: an object (or true / false)."
    problem = json_value_problem(schema, name="arguments_schema")
    if problem:
        return problem
    size = len(_encoded(schema))
    if size > MAX_SCHEMA_BYTES:
        return f"arguments_schema is {size:,} bytes encoded; the limit is 16 KiB ({MAX_SCHEMA_BYTES:,} bytes)."
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as error:
        where = _path("arguments_schema", error.absolute_path)
        return f"arguments_schema is not a JSON Schema (draft 2020-12): at {where}, {_short(error.message)}"
    return (_reference_problem(schema) or _pattern_problem(schema)) if isinstance(schema, dict) else None


# Keywords whose values are instances (data), not schemas: a "pattern" key inside them is not a regex.
_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})


def _pattern_problem(schema: dict) -> str | None:
    """Every regular expression (pattern, patternProperties) must be one RE2 runs: no lookaround or
    backreferences, which are also what makes a pattern take exponential time."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        patterns = [node["pattern"]] if isinstance(node.get("pattern"), str) else []
        if isinstance(node.get("patternProperties"), dict):
            patterns += list(node["patternProperties"])
        for pattern in patterns:
            try:
                _regex(pattern)
            except re2.error:
                return (
                    f"arguments_schema's pattern {_short(repr(pattern))} is not one the portal runs: use a regular "
                    "expression without lookaround or backreferences (RE2 syntax)."
                )
        stack.extend(value for key, value in node.items() if key not in _DATA_KEYWORDS)
    return None


def _reference_problem(schema: dict) -> str | None:
    """Every `$ref` must point inside the schema itself: the portal fetches nothing, and a reference it
    cannot follow would leave every edit unchecked."""
    resolver = Registry().with_resource("", DRAFT202012.create_resource(schema)).resolver()
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("$ref", "$dynamicRef") and isinstance(value, str):
                    if not value.startswith("#"):
                        return (
                            f"arguments_schema refers to {_short(value)}: only references inside it (#/…) are followed."
                        )
                    try:
                        resolver.lookup(value)
                    except Unresolvable:
                        return f"arguments_schema refers to {_short(value)}, which is not in it."
                else:
                    stack.append(value)
        elif isinstance(node, list):
            stack.extend(node)
    return None


def arguments_schema_check_problem(schema: object, arguments: object) -> str | None:
    """Why the proposal itself cannot be checked against `schema` (a reference looping on itself), or None.

    Checking the engine's own arguments once, at registration, finds such a schema before a reviewer edits.
    """
    if schema is None:
        return None
    try:
        for _ in ArgumentsValidator(schema).iter_errors(arguments):
            pass
    except RecursionError:
        return "arguments_schema refers to itself without end: it cannot check any arguments."
    except Unresolvable as error:
        return f"arguments_schema cannot be followed: {_short(str(error))}"
    return None


# JSON the portal can store ----------------------------------------------------------------------


def json_value_problem(value: object, *, name: str = "arguments", max_bytes: int = MAX_ARGUMENTS_BYTES) -> str | None:
    """What PostgreSQL's jsonb and the digest cannot take (the registration's checks of `arguments`)."""
    try:
        encoded = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()
    except UnicodeEncodeError:
        return f"{name} must be valid Unicode text: it holds a lone surrogate (\\ud800–\\udfff)."
    except ValueError:
        return FINITE.replace("arguments", name, 1)
    if _holds_nul(value):
        return f"{name} must not contain the NUL character (\\u0000)."
    if len(encoded) > max_bytes:
        return f"{name} is {len(encoded):,} bytes encoded; the limit is 64 KiB ({max_bytes:,} bytes)."
    return None


def _holds_nul(value) -> bool:
    """Any NUL in a string or a key, found without recursion (the parser bounds depth, but still)."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            if "\x00" in node:
                return True
        elif isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


def _encoded(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


# The reviewer's edit ----------------------------------------------------------------------------


def may_edit(approval: ApprovalRequest) -> bool:
    """Whether a reviewer may change this request's arguments: a gate whose frozen rule allows it."""
    return approval.kind == ApprovalKind.GATE and approval.allow_edit


def parse_edited(text: str) -> object:
    """The editor's text as JSON; EditedArgumentsInvalid (naming `arguments`) when it is not JSON."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise EditedArgumentsInvalid(
            {"arguments": f"arguments is not valid JSON: {error.msg} (line {error.lineno}, column {error.colno})."}
        ) from None
    except RecursionError:
        raise EditedArgumentsInvalid({"arguments": "arguments nests too deeply to be read."}) from None


def schema_errors(approval: ApprovalRequest, arguments: object) -> dict[str, str]:
    """`{path: message}` for every way `arguments` fails the request's schema ({} when it passes)."""
    problem = json_value_problem(arguments)
    if problem:
        return {"arguments": problem}
    if approval.arguments_schema is None:
        return {}
    validator = ArgumentsValidator(approval.arguments_schema)
    try:
        errors = list(validator.iter_errors(arguments))
    except (RecursionError, Unresolvable):
        # Registration refuses such a schema (arguments_schema_check_problem); an edit that reaches a loop the
        # proposal never did is refused, never run unchecked.
        return {
            "arguments": "The request's arguments_schema cannot check these arguments: it refers to itself "
            "without end along them. Approve as proposed, or reject."
        }
    found: dict[str, str] = {}
    for error in sorted(errors, key=lambda error: list(map(str, error.absolute_path))):
        path = _path("arguments", _error_path(error))
        found.setdefault(path, _short(error.message))
    return found


def _error_path(error) -> list:
    """Where an error is; a missing required property is named by its own path, not its parent's."""
    path = list(error.absolute_path)
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = [name for name in error.validator_value if name not in error.instance]
        named = next((name for name in missing if error.message.startswith(repr(name))), None)
        if named is not None:
            path.append(named)
    return path


def _path(root: str, parts) -> str:
    return ".".join([root, *(str(part) for part in parts)])


def _short(message: str) -> str:
    return message if len(message) <= MESSAGE_MAX else message[: MESSAGE_MAX - 1] + "…"


@dataclass(frozen=True)
class ApprovedCall:
    """What an approval lets run: the arguments and their digest; `edited` when they are not the proposal's."""

    arguments: object
    digest: str
    edited: bool


def approved_call(
    *, approval: ApprovalRequest, decision: str, arguments: object = None, edit: bool = False
) -> ApprovedCall:
    """The call an approval lets run. `edit`: the reviewer sent `arguments` to run instead of the proposal.

    Refused (EditNotAllowed) where the rule does not allow edits or the decision is not an approval;
    refused (EditedArgumentsInvalid, naming each failing path) where the arguments fail the schema.
    Arguments equal to the proposal (the same digest) are an approval as proposed, not an edit.
    """
    proposed = ApprovedCall(approval.arguments, approval.call_digest, edited=False)
    if not edit:
        return proposed
    if decision != "approve":
        raise EditNotAllowed(f'arguments go with "approve" only: {decision} runs nothing, so there is nothing to edit.')
    if not may_edit(approval):
        raise EditNotAllowed(
            f"{approval.public_id}'s rule ({approval.rule_id or 'none'}) does not allow approving with edits: approve "
            "or reject it as proposed, or ask an admin to set allow_edit on the rule."
        )
    errors = schema_errors(approval, arguments)
    if errors:
        raise EditedArgumentsInvalid(errors)
    digest = digest_of(approval, arguments)
    if digest == approval.call_digest:
        return proposed
    return ApprovedCall(arguments, digest, edited=True)


def digest_of(approval: ApprovalRequest, arguments: object) -> str:
    """The call_digest of this request's call with `arguments`: equal to its own exactly when they are the proposal."""
    return call_digest(target=approval.target, operation=approval.operation, arguments=arguments)


# What was approved, and what ran, as every surface reads it ------------------------------------


def decision_arguments(approval: ApprovalRequest) -> object:
    """`decision.arguments`: what was approved (the proposal unless a reviewer edited it)."""
    return approval.approved_arguments if approval.approved_digest else approval.arguments


def decision_digest(approval: ApprovalRequest) -> str | None:
    """`decision.call_digest`: the approved call's digest (null for a token cap)."""
    return approval.approved_digest or approval.call_digest or None


def was_edited(approval: ApprovalRequest) -> bool:
    return bool(approval.approved_digest)


def digest_matches(approval: ApprovalRequest) -> bool | None:
    """`execution.digest_matches`: None when the engine reported no digest, else whether it ran what was approved."""
    approved = decision_digest(approval)
    if not approval.execution_digest or approved is None:  # nothing reported, or nothing to compare (a token cap)
        return None
    return approval.execution_digest == approved


MISMATCH_WARNING = (
    "The engine reported running a call whose digest is not the approved one: what ran may not be what was approved."
)


def mismatch_warning(approval: ApprovalRequest) -> str:
    """The warning every surface shows where an engine ran something else ("" when it did not)."""
    return MISMATCH_WARNING if digest_matches(approval) is False else ""


def edit_diff(proposed: object, approved: object) -> list[tuple[str, str]]:
    """Proposed → approved as lines of a unified diff over pretty JSON: [(kind, text)], kind in ' +-@'."""
    before = json.dumps(proposed, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
    after = json.dumps(approved, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
    lines = []
    for line in difflib.unified_diff(before, after, "proposed", "approved", n=2, lineterm=""):
        if line.startswith(("---", "+++")):
            continue
        lines.append((line[0] if line[:1] in "+-@" else " ", line))
    return lines
