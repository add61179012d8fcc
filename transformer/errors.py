"""Every error the app shows a person, in one hierarchy: each message is written for the person who typed the text or
chose the model, and a page catches `AtlasError` (or one of its two branches) to show it instead of a traceback.

    AtlasError(ValueError)
    ├── ModelLoadError          a model cannot be loaded
    │   └── FormatError         a checkpoint file is damaged, incomplete or of an unknown kind
    └── InputError              what was typed or given cannot be used
        ├── TraceInputError     a text the model cannot run on (empty, whitespace only)
        ├── SourceInputError    a phrase the translator cannot read
        ├── ScoreInputError     scores typed into the softmax lab
        ├── TableError          a table typed into the lecture example
        ├── NotOneToken         a word the embedding space needs as one token
        ├── WordNotFound        a word that is not in the sentence
        └── TraceFileError      a file that is not a trace file (transformer/trace_file.py)
"""


class AtlasError(ValueError):
    """An error the app explains to its user (a ValueError, so callers that caught ValueError still do)."""


class ModelLoadError(AtlasError):
    """A model cannot be loaded; the message says why and, where it can, what to do."""


class FormatError(ModelLoadError):
    """A checkpoint file is missing a part, is damaged or is of a kind these readers do not handle."""


class InputError(AtlasError):
    """What the user typed (or the file they gave) cannot be used; the message says why, in words for the user."""


class TraceInputError(InputError):
    """The text cannot be traced."""


class SourceInputError(InputError):
    """The phrase cannot be translated (a word the translator's vocabulary lacks, too many words…)."""


class ScoreInputError(InputError):
    """The scores typed into the softmax lab cannot be read as numbers."""


class TableError(InputError):
    """The lecture example's table cannot be read."""


class NotOneToken(InputError):
    """A text that is not exactly one token. `labels` holds the tokens it splits into (none when empty)."""

    def __init__(self, labels: tuple[str, ...]):
        super().__init__(f"{len(labels)} tokens, not one" if labels else "no text, not one token")
        self.labels = labels


class WordNotFound(InputError):
    """The chosen word is not in the sentence."""


class TraceFileError(InputError):
    """A file read as a trace is not one: not an .npz, damaged, or without the keys of transformer/trace_file.py."""
