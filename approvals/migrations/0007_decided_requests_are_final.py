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


class Migration(migrations.Migration):
    dependencies = [("approvals", "0006_no_default_ordering")]
    operations = [migrations.RunSQL(POSTGRES, POSTGRES_REVERSE)]
