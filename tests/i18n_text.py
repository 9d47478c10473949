"""What the tests of the Chinese pages count as English left over: a run of four or more English words, once
names, code and numbers are taken out (op types, provider names, dtypes and settings are CamelCase, carry digits
or capitals, or a dot)."""

from __future__ import annotations

import re

__all__ = ["english_prose"]

# words that stay as they are in Chinese: names of tools, libraries and formats; op types, provider names, dtypes
# and settings are CamelCase, carry digits or capitals, or a dot (file names), and are taken out before
_NAMES = {"ONNX", "Runtime", "PyTorch", "eager", "torch", "onnx", "onnxruntime", "numpy", "Ray", "tinycnn", "TinyCNN"}
_TOKEN = re.compile(r"\S*[./_@`]\S*|\b\w*\d\w*\b|\b[A-Z]{2,}\w*\b|\b[A-Za-z]+[A-Z]\w*\b")
_PROSE = re.compile(r"\b[A-Za-z][a-z'’-]+(?:[ ,]+[A-Za-z][a-z'’-]+){3,}")


def english_prose(texts: list[str]) -> list[str]:
    """The texts with a run of four or more English words, once names, code and numbers are taken out."""
    found = []
    for text in texts:
        plain = _TOKEN.sub(" ", text)
        plain = " ".join("" if word in _NAMES else word for word in plain.split(" "))
        if _PROSE.search(plain):
            found.append(text)
    return found
