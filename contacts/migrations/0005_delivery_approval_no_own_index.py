"""Drop the index Django gave `Delivery.approval` (a foreign key): one_delivery_per_event
(approval, contact_public_id, event) starts with the same column and serves every lookup by request
— the request page's log, a resolution's DELETE and escalation check, the cascade. One index fewer
for each delivery row a registration writes. Reversing recreates it."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("contacts", "0004_delivery_schedule"),
    ]

    operations = [
        migrations.AlterField(
            model_name="delivery",
            name="approval",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="deliveries",
                to="approvals.approvalrequest",
            ),
        ),
    ]
