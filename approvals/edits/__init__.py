"""Approve with edits (docs/api.md): which calls may be edited, the edited arguments checked, the digests."""
