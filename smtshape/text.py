"""Text helpers every output shares: untrusted model text made safe for a terminal,
plurals."""
from __future__ import annotations


def clean(s) -> str:
    """Text from the model is untrusted: no control characters on the terminal."""
    s = str(s)
    if s.isprintable():
        return s
    return "".join(ch if ch.isprintable() or ch in "\n" else repr(ch)[1:-1] for ch in s)


def one_line(s) -> str:
    return clean(s).replace("\n", "\\n")


_PLURALS = {"identity": "identities", "dummy": "dummies"}


def plural(n: int, word: str) -> str:
    """``1 constraint``, ``2 constraints``, ``3 identities``."""
    return f"{n} {word if n == 1 else _PLURALS.get(word, word + 's')}"
