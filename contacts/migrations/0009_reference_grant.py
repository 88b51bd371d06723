"""Grants of `${HITL_…}` variables to workspaces (contacts/refs.py).

No grant is made for what existing contacts name: a contact naming another workspace's variable is
what this closes, and granting every name found would keep it open. `hitl refs list` shows the host
what its contacts name and may not use, to grant deliberately (docs/deploy.md, Upgrading).
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("contacts", "0008_channels_push_and_telegram"),
        ("workspaces", "0003_notify_signins"),
    ]

    operations = [
        migrations.CreateModel(
            name="ReferenceGrant",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("name", models.CharField(max_length=200)),
                ("granted_at", models.DateTimeField(auto_now_add=True)),
                (
                    "workspace",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="reference_grants",
                        to="workspaces.workspace",
                    ),
                ),
            ],
            options={"ordering": ["name"]},
        ),
        migrations.AddConstraint(
            model_name="referencegrant",
            constraint=models.UniqueConstraint(fields=("workspace", "name"), name="reference_granted_once"),
        ),
    ]
