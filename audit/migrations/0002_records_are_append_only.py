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


class Migration(migrations.Migration):
    dependencies = [("audit", "0001_initial")]
    operations = [migrations.RunSQL(POSTGRES, POSTGRES_REVERSE)]
