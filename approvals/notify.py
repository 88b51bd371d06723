"""The NOTIFY channels that wake listeners (delivered when the sending transaction commits).

Every end of a pending request sends on CHANNEL itself (pg_notify in its statement: approvals/ending.py).
"""

# A request was decided or expired (its public id).
CHANNEL = "hitl_approvals"
# A token stopped being worth anything (`token:<id>`, `user:<id>`): sent by triggers, workspaces/migrations/0002.
TOKENS_CHANNEL = "hitl_tokens"
# A run grant was created (`<config pk>:<rule id>`): sent by a trigger, approvals/migrations/0009.
GRANTS_CHANNEL = "hitl_grants"
# A halt was made or lifted (`<workspace pk>`): sent by a trigger, approvals/migrations/0010.
HALTS_CHANNEL = "hitl_halts"
