"""The database role the portal runs as may not own what keeps history (docs/deploy.md, "Database roles").

The triggers that refuse to rewrite history (audit/migrations/0002 and 0004, approvals' 0007,
rules' 0002 and 0003) bind everyone but the tables' owner and superusers: an owner can run
`ALTER TABLE … DISABLE TRIGGER USER`, rewrite, and switch them back on. So migrations run as an
owner role, and the web servers and the cluster as a role that only reads and writes rows:
`HITL_DB_RUNTIME_ROLE` names it when migrating, and `runtime_grant` gives it exactly that after
every migrate. `manage.py check --deploy` fails when the role the portal runs as is a superuser or
may act as the owner of a history table.
"""

from psycopg import sql

HISTORY_TABLES = (
    "audit_auditrecord",
    "audit_audithead",
    "rules_configversion",
    "approvals_approvalrequest",
)


def runtime_role_problems(connection) -> list[str]:
    """Why the role of this connection could switch history's triggers off; empty when it cannot."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_user, rolsuper FROM pg_roles WHERE rolname = current_user")
        role, superuser = cursor.fetchone()
        if superuser:
            return [f"the database role {role} is a superuser: it can switch off the triggers that keep history"]
        cursor.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE c.relname = ANY(%s) AND n.nspname = ANY(current_schemas(false)) "
            "AND pg_has_role(current_user, c.relowner, 'MEMBER') ORDER BY c.relname",
            [list(HISTORY_TABLES)],
        )
        owned = [name for (name,) in cursor.fetchall()]
    if owned:
        return [
            f"the database role {role} owns {', '.join(owned)}: an owner can switch off the triggers that keep "
            "history (ALTER TABLE … DISABLE TRIGGER)"
        ]
    return []


def runtime_grant(connection, role: str) -> None:
    """Let `role` read and write every row of the portal's tables, and nothing more (no DDL, no TRUNCATE)."""
    statements = [
        "GRANT USAGE ON SCHEMA {schema} TO {role}",
        "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema} TO {role}",
        "GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA {schema} TO {role}",
    ]
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_schema()")
        (schema,) = cursor.fetchone()
        for statement in statements:
            cursor.execute(sql.SQL(statement).format(schema=sql.Identifier(schema), role=sql.Identifier(role)))
