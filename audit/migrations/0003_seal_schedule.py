"""The django-q2 schedule that seals new audit records every minute (export and verify seal too)."""

from django.db import migrations

NAME = "audit: seal new records into the chain"
FUNC = "audit.tasks.seal_all"


def create_schedule(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.update_or_create(
        name=NAME, defaults={"func": FUNC, "schedule_type": "I", "minutes": 1, "repeats": -1}
    )


def delete_schedule(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.filter(name=NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0002_records_are_append_only"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]
    operations = [migrations.RunPython(create_schedule, delete_schedule)]
