"""Run grants ("approve for the rest of this run") and rule windows: created, checked, revoked."""
