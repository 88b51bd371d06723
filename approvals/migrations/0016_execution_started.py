"""Run once: an approved call's outcome may be `started` (recorded by the engine before it runs the call),
then completed once by `executed` or `failed` (docs/receipts.md).

The decided-request trigger (0007, 0010) is redefined so a `started` outcome may be completed, once; an
outcome that is already final still never changes.
"""

import importlib

from django.db import migrations, models

_0010 = importlib.import_module("approvals.migrations.0010_approve_with_edits")
_ONCE = "IF OLD.status = 'approved' AND OLD.execution_status = '' AND NEW.execution_status <> '' THEN"
_STARTED_THEN_ONCE = (
    "IF OLD.status = 'approved' AND ((OLD.execution_status = '' AND NEW.execution_status <> '')\n"
    "        OR (OLD.execution_status = 'started' AND NEW.execution_status IN ('executed', 'failed'))) THEN"
)
assert _ONCE in _0010.WITH_DIGEST
WITH_STARTED = _0010.WITH_DIGEST.replace(_ONCE, _STARTED_THEN_ONCE)


def with_started(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(WITH_STARTED[: WITH_STARTED.index("CREATE TRIGGER")], params=None)


def without_started(apps, schema_editor) -> None:
    _0010.with_execution_digest(apps, schema_editor)


class Migration(migrations.Migration):
    dependencies = [
        ("approvals", "0015_merge_halts"),
    ]

    operations = [
        migrations.AlterField(
            model_name="approvalrequest",
            name="execution_status",
            field=models.CharField(
                blank=True,
                choices=[("started", "Started"), ("executed", "Executed"), ("failed", "Failed")],
                max_length=16,
            ),
        ),
        migrations.RunPython(with_started, without_started),
    ]
