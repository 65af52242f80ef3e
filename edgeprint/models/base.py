"""Names, patterns and the strict base models every wire model shares."""

from __future__ import annotations

import unicodedata
from typing import Annotated

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictStr,
    model_validator,
)

from edgeprint.config import NAME_PATTERN
from edgeprint.timefmt import rfc3339_ms

TargetName = Annotated[str, Field(pattern=NAME_PATTERN, description="[a-z0-9-]{1,40}")]
#: No control characters (C0, DEL or C1): the owner ends up in logs and IPP attributes.
OWNER_PATTERN = r"^[^\x00-\x1f\x7f-\x9f]+$"
#: requesting-user-name is name(MAX): at most 255 octets (RFC 8011 §5.1.4).
OWNER_MAX_OCTETS = 255
#: Unicode categories refused in an owner: format characters (bidi overrides such as
#: U+202E, zero-width joiners, BOM), surrogates, private use, unassigned, line/paragraph
#: separators (Cc is already refused by OWNER_PATTERN).
_OWNER_BAD_CATEGORIES = {
    "Cf": "invisible format character",
    "Cs": "lone surrogate",
    "Co": "private-use character",
    "Cn": "unassigned code point",
    "Zl": "line separator",
    "Zp": "paragraph separator",
}


#: Characters that draw nothing although their category says letter or symbol: the
#: Hangul fillers, Braille blank, and the default-ignorable code points that are not
#: already refused as format characters (combining grapheme joiner, Khmer inherent
#: vowels, Mongolian and other variation selectors).
_BLANK_LOOKING = frozenset(
    "\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180f\u2800\u3164\uffa0"
    + "".join(map(chr, range(0xFE00, 0xFE10)))
    + "".join(map(chr, range(0xE0100, 0xE01F0)))
)
#: Categories that never make a character visible on their own: marks, separators,
#: other (controls and the rest are refused outright).
_INVISIBLE_CATEGORY_CLASSES = frozenset("MZC")
#: Combining marks (Mn, Me) allowed in a row: real scripts stack two or three
#: (Vietnamese ệ = e + U+0323 + U+0302); "Zalgo" text stacks dozens.
OWNER_MAX_COMBINING_RUN = 4


#: Zero-width non-joiner and joiner (format characters, Cf) are part of ordinary names:
#: Persian and Indic scripts need ZWNJ, emoji sequences (👨‍👩‍👧) are joined with ZWJ.
_JOINERS = frozenset("\u200c\u200d")


def _check_owner(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    if value != value.strip():
        raise ValueError("must not start or end with white space")
    visible = False
    marks_in_a_row = 0
    for ch in value:
        category = unicodedata.category(ch)
        what = None if ch in _JOINERS else _OWNER_BAD_CATEGORIES.get(category)
        if what is not None:
            article = "an" if what[0] in "aeiou" else "a"
            raise ValueError(f"must not contain {article} {what} (U+{ord(ch):04X})")
        if category in ("Mn", "Me"):
            marks_in_a_row += 1
            if marks_in_a_row > OWNER_MAX_COMBINING_RUN:
                raise ValueError(
                    f"too many combining marks in a row (at most {OWNER_MAX_COMBINING_RUN})"
                )
        else:
            marks_in_a_row = 0
        if category[0] not in _INVISIBLE_CATEGORY_CLASSES and ch not in _BLANK_LOOKING:
            visible = True
    if not visible:
        raise ValueError("must contain a visible character (letter, digit, punctuation, symbol)")
    if len(value.encode("utf-8")) > OWNER_MAX_OCTETS:
        raise ValueError(f"must be at most {OWNER_MAX_OCTETS} bytes in UTF-8 (IPP name(MAX))")
    return value


#: Printable, no control or invisible characters, not blank, 1–128 characters and at most
#: 255 UTF-8 bytes.
Owner = Annotated[
    str,
    Field(min_length=1, max_length=128, pattern=OWNER_PATTERN),
    AfterValidator(_check_owner),
]
#: A release PIN: 4–12 ASCII digits, as a JSON string (leading zeros count).
PIN_PATTERN = r"^[0-9]{4,12}$"
Pin = Annotated[StrictStr, Field(pattern=PIN_PATTERN, description="4–12 digits, as a string")]
#: 8–80 printable ASCII characters (Idempotency-Key header).
IDEMPOTENCY_KEY_PATTERN = r"^[\x21-\x7e]{8,80}$"
#: Job ids are 32 lowercase hex characters.
JOB_ID_PATTERN = r"^[0-9a-f]{32}$"
#: What a kiosk integrator is told instead of a bare regular expression.
PATTERN_HINTS = {
    NAME_PATTERN: "must be 1–40 characters from a-z, 0-9 and '-'",
    OWNER_PATTERN: "must not contain control characters (newline, tab, NUL, …)",
    PIN_PATTERN: "must be 4–12 digits (0-9), sent as a JSON string",
}


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TargetModel(StrictModel):
    printer: TargetName | None = Field(default=None, description="a configured printer")
    pool: TargetName | None = Field(default=None, description="a configured pool")

    @model_validator(mode="after")
    def _one_target(self) -> TargetModel:
        if self.printer is not None and self.pool is not None:
            raise ValueError("give either printer or pool, not both")
        return self


#: A job's title (issue 24): 1–200 characters, no control characters, not only spaces.
TITLE_PATTERN = r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$"
PATTERN_HINTS[TITLE_PATTERN] = "must be 1–200 characters, no control characters, not blank"


def iso_or_null(ts: float | None) -> str | None:
    return None if ts is None else rfc3339_ms(ts)


def iso_time(ts: float) -> str:
    """Unix seconds as the API writes times (RFC 3339 UTC, milliseconds)."""
    return iso_or_null(ts) or ""
