"""The django-q2 schedule that rolls up closed hours for the insights page (a page view does it too if this lags)."""

from django.db import migrations

NAME = "insights: roll up closed hours"
FUNC = "insights.tasks.roll_up_all"


def create_schedule(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.update_or_create(
        name=NAME, defaults={"func": FUNC, "schedule_type": "I", "minutes": 5, "repeats": -1}
    )


def delete_schedule(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.filter(name=NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("insights", "0002_hourly_rollups"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]
    operations = [migrations.RunPython(create_schedule, delete_schedule)]
