"""What passkeys tell the rest of the portal: a person's passkey was added or removed.

Sent once the change commits, with `user_id`, `change` ("registered" or "removed") and the passkey's
`name`; integrations tell the person on their channels (integrations/passkey_notices.py).
"""

from django.dispatch import Signal

passkey_changed = Signal()
