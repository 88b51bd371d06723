"""The database itself refuses to change a published config version.

Model code refuses too (ConfigVersion.save / QuerySet.update), but a raw UPDATE, a shell
session or a future bug must not be able to rewrite what an engine was served.
"""

from django.db import migrations

POSTGRES = """
CREATE OR REPLACE FUNCTION rules_configversion_immutable() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'A published config version never changes (config %, version %)', OLD.config_id, OLD.number;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER rules_configversion_no_update BEFORE UPDATE ON rules_configversion
    FOR EACH ROW EXECUTE FUNCTION rules_configversion_immutable();
"""
POSTGRES_REVERSE = """
DROP TRIGGER IF EXISTS rules_configversion_no_update ON rules_configversion;
DROP FUNCTION IF EXISTS rules_configversion_immutable();
"""


class Migration(migrations.Migration):
    dependencies = [("rules", "0001_initial")]
    operations = [migrations.RunSQL(POSTGRES, POSTGRES_REVERSE)]
