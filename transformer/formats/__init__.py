"""Readers for pretrained checkpoints in other formats: each returns a config, a float32 state dict in
Hugging Face naming and a `tokenizers.Tokenizer`, offline, without pickle and without importing the
packages that ship the files (packages.py finds them).
"""

from ..errors import FormatError

__all__ = ["FormatError"]
