"""History cannot be emptied wholesale, and the audit chain's head only moves forward.

Row triggers (0002 here, approvals 0007, rules 0002/0003) refuse UPDATE and DELETE of history,
but TRUNCATE fires no row trigger: a statement trigger refuses it on the audit log, its heads,
published config versions, and approval requests once any of them is decided. The head of a
workspace's chain may only advance (sealing) or be re-locked unchanged; it is deleted only while
nothing was ever sealed (a new workspace removed again). Resetting it to 0 after emptying the log
would otherwise read as "0 records, chain intact".

Test teardown empties tables with DELETE under session_replication_role = replica (tests/conftest.py),
which skips these triggers as it skips the row triggers; nothing else needs to.
"""

from django.db import migrations

POSTGRES = """
CREATE OR REPLACE FUNCTION history_no_truncate() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'History is never truncated (%)', TG_TABLE_NAME
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER audit_record_no_truncate BEFORE TRUNCATE ON audit_auditrecord
    FOR EACH STATEMENT EXECUTE FUNCTION history_no_truncate();
CREATE TRIGGER audit_head_no_truncate BEFORE TRUNCATE ON audit_audithead
    FOR EACH STATEMENT EXECUTE FUNCTION history_no_truncate();
CREATE TRIGGER rules_configversion_no_truncate BEFORE TRUNCATE ON rules_configversion
    FOR EACH STATEMENT EXECUTE FUNCTION history_no_truncate();

CREATE OR REPLACE FUNCTION approvals_no_truncate_of_decided() RETURNS trigger AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM approvals_approvalrequest WHERE status <> 'pending') THEN
        RAISE EXCEPTION 'Decided approval requests are never truncated'
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER approvals_no_truncate_of_decided BEFORE TRUNCATE ON approvals_approvalrequest
    FOR EACH STATEMENT EXECUTE FUNCTION approvals_no_truncate_of_decided();

CREATE OR REPLACE FUNCTION audit_head_moves_forward() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF OLD.seq = 0 THEN
            RETURN OLD;
        END IF;
        RAISE EXCEPTION 'The audit head of workspace % is never deleted (seq %)', OLD.workspace_id, OLD.seq
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    IF NEW.workspace_id = OLD.workspace_id
       AND (NEW.seq > OLD.seq OR (NEW.seq = OLD.seq AND NEW.hash = OLD.hash)) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'The audit head of workspace % only moves forward (seq % to %)', OLD.workspace_id, OLD.seq, NEW.seq
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER audit_head_forward_only BEFORE UPDATE OR DELETE ON audit_audithead
    FOR EACH ROW EXECUTE FUNCTION audit_head_moves_forward();
"""
POSTGRES_REVERSE = """
DROP TRIGGER IF EXISTS audit_head_forward_only ON audit_audithead;
DROP FUNCTION IF EXISTS audit_head_moves_forward();
DROP TRIGGER IF EXISTS approvals_no_truncate_of_decided ON approvals_approvalrequest;
DROP FUNCTION IF EXISTS approvals_no_truncate_of_decided();
DROP TRIGGER IF EXISTS rules_configversion_no_truncate ON rules_configversion;
DROP TRIGGER IF EXISTS audit_head_no_truncate ON audit_audithead;
DROP TRIGGER IF EXISTS audit_record_no_truncate ON audit_auditrecord;
DROP FUNCTION IF EXISTS history_no_truncate();
"""


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0003_seal_schedule"),
        ("approvals", "0009_notify_grant_created"),
        ("rules", "0005_merge_approver_policy_and_notifications"),
    ]
    operations = [migrations.RunSQL(POSTGRES, POSTGRES_REVERSE)]
