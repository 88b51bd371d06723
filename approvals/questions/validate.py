"""Questions and plans (docs/questions.md): what a run may ask people, and whether an answer fits.

The one place that knows a question's shape. The registration checks what an engine asks
(`questions_validate`, `plan_validate`); every door a person answers through — the card, the
request page, the API, the CLI, Slack — checks the answer here (`answers_check`) before
approvals.review.decide records it. Nothing here writes.
"""

import math
from typing import Any

from approvals.exceptions import WrongDecision
from approvals.models import Action, ApprovalKind, Status
from common.exceptions import DomainError

QUESTIONS_MIN, QUESTIONS_MAX = 1, 8
OPTIONS_MIN, OPTIONS_MAX = 2, 20
ID_MAX = 64
TITLE_MAX = 200
PLAN_MAX = 20_000
PROMPT_MAX = 2_000
VALUE_MAX = 200  # an option's value and label
DESCRIPTION_MAX = 2_000
TEXT_ANSWER_MAX = 2_000

TYPES = ("choice", "text", "number", "boolean")
QUESTION_KEYS = {"id", "prompt", "type", "options", "multi", "free_text", "recommended", "min", "max", "required"}
OPTION_KEYS = {"value", "label", "description"}

# The decision words of a question and a plan → (the status it ends in, the action the engine takes).
QUESTION_DECISIONS: dict[str, dict[str, tuple[str, str]]] = {
    ApprovalKind.QUESTION: {"answer": (Status.ANSWERED, Action.RESUME), "decline": (Status.DECLINED, Action.RESUME)},
    ApprovalKind.PLAN: {"approve": (Status.APPROVED, Action.RESUME), "revise": (Status.REJECTED, Action.REVISE)},
}
QUESTION_WORDS = list(dict.fromkeys(word for words in QUESTION_DECISIONS.values() for word in words))
# The audit action each decision word records.
AUDIT_ACTIONS = {
    "answer": "question.answered",
    "decline": "question.declined",
    "approve": "plan.approved",
    "revise": "plan.revised",
}
ASKED_ACTIONS = {ApprovalKind.QUESTION: "question.asked", ApprovalKind.PLAN: "plan.asked"}


class QuestionInvalid(DomainError):
    """A registration's questions, title or plan that do not fit the contract; `field` names where."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class AnswerInvalid(QuestionInvalid, WrongDecision):
    """An answer that does not fit its question: `field` is `answers.<question id>` (a wrong decision, a 400)."""


def _shown(key: str) -> str:
    """A client's key as an error may name it: what UTF-8 cannot carry (a lone surrogate) escaped."""
    return key.encode("utf-8", "backslashreplace").decode("utf-8")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return (_is_int(value) or isinstance(value, float)) and math.isfinite(value)


def _text(value: Any, *, field: str, limit: int, required: bool = True) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise QuestionInvalid(field, f"{field} must be a string.")
    if required and not value.strip():
        raise QuestionInvalid(field, f"{field} must not be empty.")
    if len(value) > limit:
        raise QuestionInvalid(field, f"{field} is at most {limit:,} characters; it has {len(value):,}.")
    _plain_text(value, field=field, error=QuestionInvalid)
    return value


def _plain_text(value: str, *, field: str, error: type[QuestionInvalid]) -> None:
    """What PostgreSQL's text and jsonb cannot hold is refused here, never met as a 500 at the INSERT."""
    if "\x00" in value:
        raise error(field, f"{field} must not contain the NUL character (\\u0000).")
    if value.isascii():  # most text; Python knows it without reading the string, and it holds no surrogate
        return
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise error(
            field, f"{field} must be valid Unicode text: it holds a lone surrogate (\\ud800–\\udfff)."
        ) from None


def title_validate(value: Any) -> str:
    return _text(value, field="title", limit=TITLE_MAX)


def plan_validate(value: Any) -> str:
    """A plan is Markdown; it is shown escaped and rendered safely (approvals.questions.markdown), never as HTML."""
    return _text(value, field="plan", limit=PLAN_MAX)


def _option(raw: Any, *, field: str) -> dict:
    if not isinstance(raw, dict):
        raise QuestionInvalid(field, f'{field} must be an object {{"value", "label"?, "description"?}}.')
    if raw.keys() - OPTION_KEYS:
        unknown = sorted(_shown(key) for key in raw.keys() - OPTION_KEYS)
        raise QuestionInvalid(f"{field}.{unknown[0]}", f"{field} has an unknown field {unknown[0]!r}.")
    option = {"value": _text(raw.get("value"), field=f"{field}.value", limit=VALUE_MAX)}
    option["label"] = _text(raw.get("label"), field=f"{field}.label", limit=VALUE_MAX, required=False)
    description = _text(raw.get("description"), field=f"{field}.description", limit=DESCRIPTION_MAX, required=False)
    option["description"] = description
    return option


def _flag(raw: dict, key: str, *, field: str, default: bool) -> bool:
    value = raw.get(key, default)
    if not isinstance(value, bool):
        raise QuestionInvalid(f"{field}.{key}", f"{field}.{key} must be true or false.")
    return value


def _question(raw: Any, *, field: str) -> dict:
    if not isinstance(raw, dict):
        raise QuestionInvalid(field, f'{field} must be an object {{"id", "prompt", "type", …}}.')
    if raw.keys() - QUESTION_KEYS:
        unknown = sorted(_shown(key) for key in raw.keys() - QUESTION_KEYS)
        raise QuestionInvalid(f"{field}.{unknown[0]}", f"{field} has an unknown field {unknown[0]!r}.")
    qid = _text(raw.get("id"), field=f"{field}.id", limit=ID_MAX)
    prompt = _text(raw.get("prompt"), field=f"{field}.prompt", limit=PROMPT_MAX)
    kind = raw.get("type")
    if kind not in TYPES:
        raise QuestionInvalid(f"{field}.type", f"{field}.type must be one of: {', '.join(TYPES)}.")
    question = {
        "id": qid,
        "prompt": prompt,
        "type": kind,
        "required": _flag(raw, "required", field=field, default=True),
    }
    for key in ("options", "multi", "free_text", "recommended"):
        if kind != "choice" and key in raw:
            raise QuestionInvalid(f"{field}.{key}", f"{field}.{key} is only for a question of type choice.")
    for key in ("min", "max"):
        if kind != "number" and key in raw:
            raise QuestionInvalid(f"{field}.{key}", f"{field}.{key} is only for a question of type number.")
    if kind == "choice":
        options = raw.get("options")
        if not isinstance(options, list) or not OPTIONS_MIN <= len(options) <= OPTIONS_MAX:
            raise QuestionInvalid(
                f"{field}.options", f"{field}.options must be a list of {OPTIONS_MIN}–{OPTIONS_MAX} options."
            )
        question["options"] = [_option(o, field=f"{field}.options.{i}") for i, o in enumerate(options)]
        values = [o["value"] for o in question["options"]]
        if len(set(values)) != len(values):
            raise QuestionInvalid(f"{field}.options", f"{field}.options must have distinct values.")
        question["multi"] = _flag(raw, "multi", field=field, default=False)
        question["free_text"] = _flag(raw, "free_text", field=field, default=True)
        recommended = raw.get("recommended")
        if recommended is not None and not (_is_int(recommended) and 0 <= recommended < len(options)):
            raise QuestionInvalid(
                f"{field}.recommended", f"{field}.recommended must be an option's index, 0 to {len(options) - 1}."
            )
        question["recommended"] = recommended
    if kind == "number":
        for key in ("min", "max"):
            value = raw.get(key)
            if value is not None and not _is_number(value):
                raise QuestionInvalid(f"{field}.{key}", f"{field}.{key} must be a finite number.")
            question[key] = value
        if question["min"] is not None and question["max"] is not None and question["min"] > question["max"]:
            raise QuestionInvalid(f"{field}.max", f"{field}.max must not be below its min.")
    return question


def questions_validate(value: Any) -> list[dict]:
    """A registration's questions, checked and completed with their defaults (as stored and returned)."""
    if not isinstance(value, list) or not QUESTIONS_MIN <= len(value) <= QUESTIONS_MAX:
        raise QuestionInvalid("questions", f"questions must be a list of {QUESTIONS_MIN}–{QUESTIONS_MAX} questions.")
    questions = [_question(raw, field=f"questions.{index}") for index, raw in enumerate(value)]
    seen = set()
    for index, question in enumerate(questions):
        if question["id"] in seen:
            raise QuestionInvalid(f"questions.{index}.id", f"questions.{index}.id {question['id']!r} is used twice.")
        seen.add(question["id"])
    return questions


def _choice_answer(question: dict, value: Any, *, field: str) -> Any:
    values = [option["value"] for option in question["options"]]
    own = question["free_text"]
    hint = f"one of: {', '.join(values)}" + (", or words of your own" if own else "")

    def one(item: Any) -> str:
        if not isinstance(item, str) or not item.strip():
            raise AnswerInvalid(field, f"{field} must be {hint}.")
        _plain_text(item, field=field, error=AnswerInvalid)
        if item not in values and not own:
            raise AnswerInvalid(field, f"{field} {item!r} is not an option: answer {hint}.")
        if len(item) > TEXT_ANSWER_MAX:
            raise AnswerInvalid(field, f"{field} is at most {TEXT_ANSWER_MAX:,} characters.")
        return item

    if question["multi"]:
        if not isinstance(value, list) or not value:
            raise AnswerInvalid(field, f"{field} must be a list of options ({hint}).")
        chosen = [one(item) for item in value]
        if len(set(chosen)) != len(chosen):
            raise AnswerInvalid(field, f"{field} names an option twice.")
        return chosen
    if isinstance(value, list):
        raise AnswerInvalid(field, f"{field} takes one value: this question is a single choice ({hint}).")
    return one(value)


def _answer(question: dict, value: Any) -> Any:
    field = f"answers.{question['id']}"
    kind = question["type"]
    if kind == "choice":
        return _choice_answer(question, value, field=field)
    if kind == "text":
        if not isinstance(value, str) or not value.strip():
            raise AnswerInvalid(field, f"{field} must be some words.")
        if len(value) > TEXT_ANSWER_MAX:
            raise AnswerInvalid(field, f"{field} is at most {TEXT_ANSWER_MAX:,} characters.")
        _plain_text(value, field=field, error=AnswerInvalid)
        return value
    if kind == "number":
        if not _is_number(value):
            raise AnswerInvalid(field, f"{field} must be a number.")
        low, high = question.get("min"), question.get("max")
        if (low is not None and value < low) or (high is not None and value > high):
            span = f"{'' if low is None else low}–{'' if high is None else high}"
            raise AnswerInvalid(field, f"{field} {value} is out of range ({span}).")
        return value
    if not isinstance(value, bool):
        raise AnswerInvalid(field, f"{field} must be true or false.")
    return value


def answers_check(*, questions: list[dict], answers: Any) -> dict:
    """The answers as they will be recorded; AnswerInvalid naming `answers.<id>` when one does not fit.

    A value left out (or null) is no answer: refused for a required question, dropped otherwise.
    """
    if not isinstance(answers, dict):
        raise AnswerInvalid("answers", 'answers must be an object {"<question id>": value}.')
    known = {question["id"] for question in questions}
    unknown = sorted(_shown(str(key)) for key in set(answers) - known)
    if unknown:
        raise AnswerInvalid(f"answers.{unknown[0]}", f"answers.{unknown[0]} is not a question of this request.")
    checked = {}
    for question in questions:
        value = answers.get(question["id"])
        if value is None or value == "" or value == []:
            if question["required"]:
                raise AnswerInvalid(f"answers.{question['id']}", f"answers.{question['id']} is required.")
            continue
        checked[question["id"]] = _answer(question, value)
    return checked


def answer_from_text(question: dict, raw: str) -> Any:
    """A value typed as text (a form field, `--set ID=VALUE`, a Slack field) as its question reads it.

    Still checked by answers_check afterwards; this only turns words into the value's type.
    """
    kind = question["type"]
    raw = raw.strip()
    if raw == "":
        return None
    if kind == "number":
        try:
            number = float(raw)
        except ValueError:
            return raw  # answers_check names it as not a number
        return int(number) if number.is_integer() and "." not in raw and "e" not in raw.lower() else number
    if kind == "boolean":
        lowered = raw.lower()
        if lowered in ("true", "yes", "y", "1", "on"):
            return True
        if lowered in ("false", "no", "n", "0", "off"):
            return False
        return raw
    if kind == "choice" and question.get("multi"):
        return [part.strip() for part in raw.split(",") if part.strip()]
    return raw


def answers_from_form(questions: list[dict], data) -> dict:
    """A card's form (a QueryDict: `answer-<n>`, `answer-<n>-own`) as answers, for answers_check.

    For a choice, words typed in its "own words" box stand for (single) or join (multi) the options ticked.
    """
    answers = {}
    for index, question in enumerate(questions):
        name = f"answer-{index}"
        own = (data.get(f"{name}-own") or "").strip()
        if question["type"] == "choice" and question.get("multi"):
            chosen = [value for value in data.getlist(name) if value]
            answers[question["id"]] = chosen + ([own] if own else [])
        elif question["type"] == "choice":
            answers[question["id"]] = own or data.get(name) or None
        else:
            answers[question["id"]] = answer_from_text(question, data.get(name) or "")
    return answers


def option_label(option: dict) -> str:
    return option.get("label") or option["value"]


def answer_words(question: dict, value: Any) -> str:
    """An answer as a person reads it (history, Slack's updated message, email)."""
    if value is None:
        return "—"
    if question["type"] == "boolean":
        return "Yes" if value else "No"
    if question["type"] == "choice":
        labels = {option["value"]: option_label(option) for option in question["options"]}
        items = value if isinstance(value, list) else [value]
        return ", ".join(labels.get(item, f"“{item}”") for item in items)
    return str(value)
