"""The database refuses to rewrite or delete a decided request.

Once a request is approved, rejected or expired, its row is history: the only change it may
still take is the outcome of an approved call, recorded once (execution_* set while empty).
A deleted user or engine key may still be forgotten by id (SET NULL): the decider's email and
the request's facts stay. Pending rows change freely — deciding and the sweep start there.
"""

from django.db import migrations

POSTGRES = """
CREATE OR REPLACE FUNCTION approvals_decided_request_is_final() RETURNS trigger AS $$
DECLARE
    allowed approvals_approvalrequest%ROWTYPE;
BEGIN
    IF OLD.status = 'pending' THEN
        RETURN COALESCE(NEW, OLD);
    END IF;
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'A decided approval request is never deleted (%)', OLD.public_id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    allowed := OLD;
    IF NEW.decided_by_id IS NULL THEN allowed.decided_by_id := NULL; END IF;
    IF NEW.engine_key_id IS NULL THEN allowed.engine_key_id := NULL; END IF;
    IF OLD.status = 'approved' AND OLD.execution_status = '' AND NEW.execution_status <> '' THEN
        allowed.execution_status := NEW.execution_status;
        allowed.execution_id := NEW.execution_id;
        allowed.execution_detail := NEW.execution_detail;
        allowed.executed_at := NEW.executed_at;
    END IF;
    IF NEW IS DISTINCT FROM allowed THEN
        RAISE EXCEPTION 'A decided approval request never changes (%), except an approved call''s outcome, once',
            OLD.public_id USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER approvals_decided_is_final BEFORE UPDATE OR DELETE ON approvals_approvalrequest
    FOR EACH ROW EXECUTE FUNCTION approvals_decided_request_is_final();
"""
POSTGRES_REVERSE = """
DROP TRIGGER IF EXISTS approvals_decided_is_final ON approvals_approvalrequest;
DROP FUNCTION IF EXISTS approvals_decided_request_is_final();
"""
# SQLite (for trying the portal only) has no row variables: the decision's columns are named, and
# the outcome's once set. UPDATE only: Django's test runner empties SQLite tables with DELETE.
SQLITE = [
    """CREATE TRIGGER approvals_decided_no_update BEFORE UPDATE ON approvals_approvalrequest
WHEN OLD.status <> 'pending' AND (
    NEW.status IS NOT OLD.status OR NEW.decided_at IS NOT OLD.decided_at
    OR NEW.decided_by_email IS NOT OLD.decided_by_email OR NEW.decision_action IS NOT OLD.decision_action
    OR NEW.reason IS NOT OLD.reason OR NEW.public_id IS NOT OLD.public_id OR NEW.target IS NOT OLD.target
    OR NEW.operation IS NOT OLD.operation OR NEW.arguments IS NOT OLD.arguments
    OR NEW.call_digest IS NOT OLD.call_digest OR NEW.created_at IS NOT OLD.created_at
    OR (OLD.execution_status <> '' AND (NEW.execution_status IS NOT OLD.execution_status
        OR NEW.execution_id IS NOT OLD.execution_id OR NEW.execution_detail IS NOT OLD.execution_detail
        OR NEW.executed_at IS NOT OLD.executed_at))
    OR (OLD.status <> 'approved' AND NEW.execution_status <> '')
)
BEGIN
    SELECT RAISE(ABORT, 'A decided approval request never changes');
END;""",
]
SQLITE_REVERSE = ["DROP TRIGGER IF EXISTS approvals_decided_no_update;"]


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
    dependencies = [("approvals", "0006_no_default_ordering")]
    operations = [migrations.RunPython(forwards, backwards)]
