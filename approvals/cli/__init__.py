"""The `hitl` subcommands of approvals: pending/approve/deny/answer, halts, receipt keys, the demo engine."""
