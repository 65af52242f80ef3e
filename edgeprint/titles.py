"""A job's title (issue 24): the words a person knows their job by on the release page.

A title is given with the submission (``metadata.title``, refused when bad), or made
here from what a client sent without asking: a PDF's /Title, an IPP job-name, an
uploaded file's name. Those are cleaned rather than refused (a job is never lost
over its name): controls and line breaks become spaces, runs of white space one,
and the result is cut to :data:`MAX_TITLE_CHARS`; nothing visible left is no title.
"""

from __future__ import annotations

import unicodedata

#: The longest title, in characters (the API refuses longer; anything else is cut).
MAX_TITLE_CHARS = 200
#: Categories that become a space: controls, lone surrogates, line/paragraph separators.
_SPACED = frozenset({"Cc", "Cs", "Zl", "Zp"})


def clean_title(value: object) -> str | None:
    """A title made from text a client sent without meaning it as one; None when
    ``value`` is not text or has nothing visible."""
    if not isinstance(value, str):
        return None
    # a hostile PDF's /Title may be megabytes: look at no more than could make a title
    head = value[: MAX_TITLE_CHARS * 8]
    text = "".join(" " if unicodedata.category(ch) in _SPACED else ch for ch in head)
    text = " ".join(text.split())[:MAX_TITLE_CHARS].rstrip()
    return text or None


#: What a browser escapes in a form's file name (the HTML multipart/form-data encoding).
_FORM_ESCAPES = {"%22": '"', "%0A": " ", "%0D": " "}


def file_title(filename: str | None) -> str | None:
    """The title of an uploaded file: its name as the person saw it, without any folders
    a browser sent (old ones send the whole path)."""
    if not filename:
        return None
    for escaped, char in _FORM_ESCAPES.items():
        filename = filename.replace(escaped, char)
    return clean_title(filename.replace("\\", "/").rsplit("/", 1)[-1])
