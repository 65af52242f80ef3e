"""Text from outside (a printer's message, an owner's name) made safe to show a person.

One place says what a control character is (C0, DEL, C1) and how text from the
network is shown: a terminal gets ``?`` for each (:func:`clean`); a problem's
sentence and evidence (:mod:`edgeprint.printers.problems`) get a visible escape
(``\\x1b``) and are cut to a length a screen can hold (:func:`escape`), so a printer
that answers with 4 KB of junk or an escape sequence shows as a short, inert line.
"""

from __future__ import annotations

import re

#: Control characters (C0, DEL, C1): never shown as they are.
CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f]")
#: What ends a cut text.
ELLIPSIS = "…"


def clean(text: str) -> str:
    """Each control character as ``?`` (a terminal line keeps its width)."""
    return CONTROL_RE.sub("?", text)


def escape(text: str, limit: int) -> str:
    """Control characters as ``\\xNN`` (line breaks included), then cut to ``limit``
    characters with ``…`` when longer. Only the head of a huge text is looked at."""
    head = CONTROL_RE.sub(lambda m: f"\\x{ord(m.group()):02x}", text[: limit * 4 + 4])
    return head if len(head) <= limit else head[: limit - 1] + ELLIPSIS
