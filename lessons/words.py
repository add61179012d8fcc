"""Small helpers for the texts the pages show."""


def noun(n: int, singular: str, plural: str | None = None) -> str:
    """The noun that goes with the number n: noun(1, "token") = "token", noun(2, "token") = "tokens"."""
    return singular if n == 1 else plural or singular + "s"
