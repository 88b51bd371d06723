"""`manage.py check --deploy`: the role the portal runs as cannot switch history's triggers off (audit/db_roles.py)."""

from django.core.checks import Error, Warning
from django.db import DatabaseError, connection

from .db_roles import runtime_role_problems

HINT = (
    "Run the portal as a role that owns nothing: migrate as the owner with HITL_DB_RUNTIME_ROLE naming the "
    "runtime role, then set DATABASE_URL to the runtime role (docs/deploy.md, 'Database roles')."
)


def runtime_role_check(app_configs=None, databases=None, **kwargs) -> list:
    """Asks the database, so like Django's own database checks it runs only with `check --database default`."""
    if not databases or connection.alias not in databases:
        return []
    try:
        problems = runtime_role_problems(connection)
    except DatabaseError as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return [Warning(f"could not check the database role: {first}", id="hitl.W401")]
    return [Error(problem, hint=HINT, id="hitl.E401") for problem in problems]
