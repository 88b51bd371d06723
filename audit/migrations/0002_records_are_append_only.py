"""The database refuses to UPDATE or DELETE an audit record: the log is append-only.

One UPDATE is let through, once per record: sealing, which sets `seq`, `prev_hash` and `hash`
on a record that has none and changes nothing else (audit/services.py, audit_seal).
Model code never tries anything else; the trigger stops a raw UPDATE, a shell session or a
future bug. (TRUNCATE is left to the table's owner: test databases are emptied that way.)
"""

from django.db import migrations

POSTGRES = """
CREATE OR REPLACE FUNCTION audit_record_append_only() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.hash IS NULL AND NEW.hash IS NOT NULL AND NEW.seq IS NOT NULL
       AND (NEW.id, NEW.workspace_id, NEW.at, NEW.actor, NEW.action, NEW.object, NEW.data)
           IS NOT DISTINCT FROM (OLD.id, OLD.workspace_id, OLD.at, OLD.actor, OLD.action, OLD.object, OLD.data) THEN
        RETURN NEW;  -- sealing
    END IF;
    RAISE EXCEPTION 'Audit records are never changed or deleted (workspace %, seq %)', OLD.workspace_id, OLD.seq
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER audit_record_no_update_or_delete BEFORE UPDATE OR DELETE ON audit_auditrecord
    FOR EACH ROW EXECUTE FUNCTION audit_record_append_only();
"""
POSTGRES_REVERSE = """
DROP TRIGGER IF EXISTS audit_record_no_update_or_delete ON audit_auditrecord;
DROP FUNCTION IF EXISTS audit_record_append_only();
"""
# SQLite (for trying the portal only) refuses UPDATE; not DELETE, which is how Django's test
# runner empties its tables there (PostgreSQL's runner uses TRUNCATE, which row triggers ignore).
SQLITE = [
    """CREATE TRIGGER audit_record_no_update BEFORE UPDATE ON audit_auditrecord
WHEN NOT (OLD.hash IS NULL AND NEW.hash IS NOT NULL AND NEW.seq IS NOT NULL
          AND NEW.id IS OLD.id AND NEW.workspace_id IS OLD.workspace_id AND NEW.at IS OLD.at
          AND NEW.actor IS OLD.actor AND NEW.action IS OLD.action AND NEW.object IS OLD.object
          AND NEW.data IS OLD.data)
BEGIN
    SELECT RAISE(ABORT, 'Audit records are never changed or deleted');
END;""",
]
SQLITE_REVERSE = ["DROP TRIGGER IF EXISTS audit_record_no_update;"]


def forwards(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(POSTGRES, params=None)
    elif vendor == "sqlite":
        for statement in SQLITE:
            schema_editor.execute(statement, params=None)


def backwards(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(POSTGRES_REVERSE, params=None)
    elif vendor == "sqlite":
        for statement in SQLITE_REVERSE:
            schema_editor.execute(statement, params=None)


class Migration(migrations.Migration):
    dependencies = [("audit", "0001_initial")]
    operations = [migrations.RunPython(forwards, backwards)]
