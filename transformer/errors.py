"""The engine's errors: each message is written for the person who typed the text or chose the model."""


class ModelLoadError(ValueError):
    """A model cannot be loaded; the message says why and, where it can, what to do."""


class TraceInputError(ValueError):
    """The text cannot be traced; the message says why, in words for the user."""
