"""A record's `object` holds whatever the change names: a run id of up to 500 characters (a run halt), an
email of up to 254 (a member change), not only a public id; 64 characters turned such a change into a 500."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("audit", "0004_history_is_never_truncated")]

    operations = [migrations.AlterField(model_name="auditrecord", name="object", field=models.CharField(blank=True, max_length=500))]
