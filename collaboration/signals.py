"""What collaboration tells the apps above it, without importing them (integrations connects in its ready).

`claim_changed` is sent once a claim taken or released has committed, with the request's pk
(`approval_id`): the chat cards that show who is on it are brought up to date from it.
"""

from django.dispatch import Signal

claim_changed = Signal()
