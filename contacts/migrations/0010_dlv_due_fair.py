"""The outbox claimed fairly (contacts/claiming.py): its index, and `skipped`, a row not sent because
its request was decided before its turn came."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("contacts", "0009_reference_grant"),
    ]

    operations = [
        migrations.AlterField(
            model_name="delivery",
            name="status",
            field=models.CharField(
                choices=[("pending", "Pending"), ("sent", "Sent"), ("failed", "Failed"), ("skipped", "Skipped")],
                default="pending",
                max_length=8,
            ),
        ),
        migrations.AddIndex(
            model_name="delivery",
            index=models.Index(
                condition=models.Q(("status", "pending")),
                fields=["workspace", "channel", "next_attempt_at"],
                name="dlv_due_fair",
            ),
        ),
    ]
