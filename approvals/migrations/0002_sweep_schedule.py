"""The django-q2 schedule that sweeps overdue approval requests every minute."""

from django.db import migrations

NAME = "approvals: expire overdue requests"
FUNC = "approvals.tasks.sweep_overdue"


def create_schedule(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    # Idempotent by name: re-running the migration (or a fresh database) leaves exactly one.
    Schedule.objects.update_or_create(
        name=NAME,
        defaults={"func": FUNC, "schedule_type": "I", "minutes": 1, "repeats": -1},
    )


def delete_schedule(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.filter(name=NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("approvals", "0001_initial"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(create_schedule, delete_schedule)]
