"""Registration bodies for questions and plans (docs/questions.md)."""

QUESTIONS = [
    {
        "id": "env",
        "prompt": "Which environment should the migration run on?",
        "type": "choice",
        "options": [{"value": "staging", "label": "Staging"}, {"value": "prod", "label": "Production"}],
        "recommended": 0,
        "free_text": False,
    },
    {
        "id": "tables",
        "prompt": "Which tables may it touch?",
        "type": "choice",
        "multi": True,
        "options": [{"value": "users"}, {"value": "orders"}, {"value": "invoices"}],
    },
    {"id": "why", "prompt": "Anything the agent should know?", "type": "text", "required": False},
    {"id": "batch", "prompt": "Rows per batch?", "type": "number", "min": 1, "max": 10000},
    {"id": "backup", "prompt": "Take a backup first?", "type": "boolean"},
]

PLAN = """# Migrate the orders table

1. Copy `orders` to `orders_v2` in batches of **500**.
2. Switch reads, then writes.

<script>alert("x")</script>

![tracking pixel](https://evil.example/pixel.png)
"""

ANSWERS = {"env": "staging", "tables": ["users", "orders"], "batch": 500, "backup": True}


def question_body(config, version: int = 1, **overrides) -> dict:
    body = {
        "kind": "question",
        "config_id": config.public_id,
        "config_version": version,
        "run_id": "run_1",
        "thread_id": "thr_1",
        "caller": "migration-bot",
        "title": "Before the migration",
        "questions": QUESTIONS,
    }
    body.update(overrides)
    return {key: value for key, value in body.items() if value is not ...}


def plan_body(config, version: int = 1, **overrides) -> dict:
    body = {
        "kind": "plan",
        "config_id": config.public_id,
        "config_version": version,
        "run_id": "run_1",
        "thread_id": "thr_1",
        "caller": "migration-bot",
        "title": "Orders migration plan",
        "plan": PLAN,
    }
    body.update(overrides)
    return {key: value for key, value in body.items() if value is not ...}
