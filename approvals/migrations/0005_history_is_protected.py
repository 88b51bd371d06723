"""Approval history is never deleted by a cascade: deleting its config or the person who
decided is refused (PROTECT) instead of taking the decided requests with it."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("approvals", "0004_registration_indexes"),
        ("rules", "0003_versions_never_deleted"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]
    operations = [
        migrations.AlterField(
            model_name="approvalrequest",
            name="config",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT, related_name="approval_requests", to="rules.config"
            ),
        ),
        migrations.AlterField(
            model_name="approvalrequest",
            name="decided_by",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
    ]
