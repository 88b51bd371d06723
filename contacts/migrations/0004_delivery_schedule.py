"""The django-q2 schedule that sends due deliveries every minute: the safety net behind the
task enqueued on each event's commit (a killed worker's rows, reminders, escalations, retries)."""

from django.db import migrations

NAME = "contacts: send due notifications"
FUNC = "contacts.tasks.send_due"


def create_schedule(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.update_or_create(
        name=NAME, defaults={"func": FUNC, "schedule_type": "I", "minutes": 1, "repeats": -1}
    )


def delete_schedule(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.filter(name=NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("contacts", "0003_delivery_outbox"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(create_schedule, delete_schedule)]
