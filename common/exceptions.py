"""The base of every app's domain errors. Services raise them; `errors.py` answers them over HTTP, once.

Each error says which HTTP status and docs/api.md code it answers with (`status`, `code`), beside its
own words, so the one error mapper reads them off the error and imports no app.
"""


class DomainError(Exception):
    """A refusal a service explains in the domain's words; `field` names the input at fault, if one is."""

    default_message = "The request was refused."
    field: str | None = None
    # Any refusal not saying otherwise: the client must change something.
    status = 400
    code = "invalid"

    def __init__(self, message: str = "") -> None:
        super().__init__(message or self.default_message)

    @property
    def message(self) -> str:
        return str(self)
