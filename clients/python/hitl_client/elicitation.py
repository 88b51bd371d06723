"""MCP form-mode elicitation as portal questions, and the answers back as the elicitation's result (pure).

An MCP server asks its user with `elicitation/create`: a message and a flat JSON Schema (MCP's
`PrimitiveSchemaDefinition`s — strings, with `enum` / `oneOf` for a choice; numbers and integers with
`minimum` / `maximum`; booleans; arrays of enums for a multi-select). The gateway asks the same as
a portal question, one question per property, and answers the server as MCP says:

- answered → `accept` with `content` (integers as integers, a multi-select as a list of strings);
- declined → `decline` (a person chose not to answer);
- expired, still waiting when the gateway gave up, or nobody can answer (inert) → `cancel`: nobody
  made a choice, and nothing is chosen for anyone (never the schema's `default`).
"""

from __future__ import annotations

from typing import Any

from ._questions import MAX_QUESTIONS, MAX_TITLE, Answers

MAX_ID = 64
MAX_OPTIONS = 20


class Unaskable(ValueError):
    """The requested schema cannot be asked as portal questions; the message says why."""


def _options(prop: dict) -> list[dict] | None:
    """A choice's options from `enum` (+ legacy `enumNames`), `oneOf`/`anyOf` of `const`s, or an array's items."""
    if isinstance(prop.get("enum"), list):
        names = prop.get("enumNames") if isinstance(prop.get("enumNames"), list) else []
        return [
            {"value": str(value), **({"label": str(names[i])} if i < len(names) else {})}
            for i, value in enumerate(prop["enum"])
        ]
    for key in ("oneOf", "anyOf"):
        if isinstance(prop.get(key), list) and all(isinstance(o, dict) and "const" in o for o in prop[key]):
            return [
                {"value": str(o["const"]), **({"label": str(o["title"])} if o.get("title") else {})} for o in prop[key]
            ]
    return None


def _question(qid: str, name: str, prop: dict, required: bool) -> dict:
    prompt = str(prop.get("description") or prop.get("title") or name)
    question: dict[str, Any] = {"id": qid, "prompt": prompt, "required": required}
    kind = prop.get("type")
    if kind == "array":
        options = _options(prop.get("items") or {})
        if options is None or not 2 <= len(options) <= MAX_OPTIONS:
            raise Unaskable(f"{name}: a list is asked only as a choice of 2 to {MAX_OPTIONS} options")
        return {**question, "type": "choice", "options": options, "multi": True, "free_text": False}
    if kind in ("string", None):
        options = _options(prop)
        if options is not None and 2 <= len(options) <= MAX_OPTIONS:
            values = [option["value"] for option in options]
            question.update(type="choice", options=options, free_text=False)
            # A default is a suggestion shown to the person, never an answer given for them.
            if prop.get("default") in values:
                question["recommended"] = values.index(prop["default"])
            return question
        return {**question, "type": "text"}
    if kind in ("number", "integer"):
        question["type"] = "number"
        for bound, key in (("minimum", "min"), ("maximum", "max")):
            if isinstance(prop.get(bound), (int, float)) and not isinstance(prop.get(bound), bool):
                question[key] = prop[bound]
        return question
    if kind == "boolean":
        return {**question, "type": "boolean"}
    raise Unaskable(f"{name}: a field of type {kind!r} cannot be asked (string, number, integer, boolean, list)")


def questions_of(message: str, schema: dict) -> tuple[str, list[dict], dict[str, str]]:
    """The title, the questions, and which property each question id answers."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict) or not properties:
        raise Unaskable("the elicitation asks for no fields")
    if len(properties) > MAX_QUESTIONS:
        raise Unaskable(f"the elicitation asks for {len(properties)} fields; the portal asks at most {MAX_QUESTIONS}")
    required = set(schema.get("required") or [])
    questions, fields = [], {}
    for index, (name, prop) in enumerate(properties.items(), start=1):
        qid = name if 0 < len(name) <= MAX_ID else f"field_{index}"
        questions.append(_question(qid, name, prop if isinstance(prop, dict) else {}, name in required))
        fields[qid] = name
    message = message.strip() or "An MCP server asks"
    title = message if len(message) <= MAX_TITLE else message[: MAX_TITLE - 1] + "…"
    if title != message:  # the whole message still reaches the person, above the first question
        questions[0]["prompt"] = f"{message}\n\n{questions[0]['prompt']}"
    return title, questions, fields


def content_of(answers: Answers, fields: dict[str, str], schema: dict) -> dict[str, Any]:
    """The answers as the elicitation's `content`, in the types the schema asked for."""
    properties = schema.get("properties") or {}
    content: dict[str, Any] = {}
    for qid, name in fields.items():
        value = answers.get(qid)
        if value is None:
            continue  # an optional field left empty is absent, as MCP clients send it
        kind = (properties.get(name) or {}).get("type")
        if kind == "integer" and isinstance(value, float) and value.is_integer():
            value = int(value)
        elif kind in ("string", None) and not isinstance(value, str):
            value = str(value)
        elif kind == "array" and isinstance(value, list):
            value = [str(item) for item in value]
        content[name] = value
    return content


def result_of(answers: Answers, fields: dict[str, str], schema: dict) -> dict[str, Any]:
    """The `ElicitResult` for what happened to the question: accept, decline or cancel."""
    if answers.answered:
        return {"action": "accept", "content": content_of(answers, fields, schema)}
    if answers.declined:
        return {"action": "decline"}
    return {"action": "cancel"}
