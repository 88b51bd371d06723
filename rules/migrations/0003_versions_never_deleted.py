"""A published config version is never deleted, so `cfg@N` always names the same content and
numbers are never reused: the database refuses DELETE as it already refuses UPDATE, and the
foreign keys that led to a delete (the config, the publisher) now PROTECT instead.

PostgreSQL only: a TRUNCATE (what test teardown uses) bypasses row triggers there, while
SQLite's flush deletes row by row; on SQLite the model and admin guards refuse instead.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

POSTGRES = """
CREATE TRIGGER rules_configversion_no_delete BEFORE DELETE ON rules_configversion
    FOR EACH ROW EXECUTE FUNCTION rules_configversion_immutable();
"""
POSTGRES_REVERSE = "DROP TRIGGER IF EXISTS rules_configversion_no_delete ON rules_configversion;"


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRES, params=None)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRES_REVERSE, params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("rules", "0002_versions_are_immutable"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]
    operations = [
        migrations.AlterField(
            model_name="configversion",
            name="config",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT, related_name="versions", to="rules.config"
            ),
        ),
        migrations.AlterField(
            model_name="configversion",
            name="published_by",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.RunPython(forwards, backwards),
    ]
