"""The base of every app's domain errors. Services raise them; `errors.py` maps them to HTTP, once."""


class DomainError(Exception):
    """A refusal a service explains in the domain's words; `field` names the input at fault, if one is."""

    default_message = "The request was refused."
    field: str | None = None

    def __init__(self, message: str = "") -> None:
        super().__init__(message or self.default_message)

    @property
    def message(self) -> str:
        return str(self)
