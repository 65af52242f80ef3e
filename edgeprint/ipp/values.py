"""IPP attribute values as Python values (RFC 8010 §3.9, RFC 8011 §5.1): each value keeps its
own value tag, an attribute its values in order, a group its attributes in order, so that
:mod:`edgeprint.ipp.codec` encodes back exactly what it parsed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone

from edgeprint.ipp.names import Tag


@dataclass(frozen=True)
class Resolution:
    """A resolution value: ``units`` 3 = dots per inch, 4 = dots per centimetre."""

    x: int
    y: int
    units: int


@dataclass(frozen=True)
class Range:
    """A rangeOfInteger value (both ends included)."""

    lower: int
    upper: int


@dataclass(frozen=True)
class StringWithLanguage:
    """A textWithLanguage or nameWithLanguage value."""

    language: str
    text: str


@dataclass(frozen=True)
class DateTime:
    """An RFC 2579 DateAndTime, field by field, so that it encodes back to the same bytes."""

    year: int
    month: int
    day: int
    hour: int
    minute: int
    second: int
    deci_seconds: int
    direction: str  # "+" or "-" from UTC
    utc_hours: int
    utc_minutes: int

    @classmethod
    def from_datetime(cls, when: datetime) -> DateTime:
        """The DateAndTime of an aware ``datetime`` (tenths of a second kept)."""
        offset = when.utcoffset() or timedelta(0)
        minutes = int(offset.total_seconds()) // 60
        sign = "-" if minutes < 0 else "+"
        minutes = abs(minutes)
        return cls(
            when.year,
            when.month,
            when.day,
            when.hour,
            when.minute,
            when.second,
            when.microsecond // 100_000,
            sign,
            minutes // 60,
            minutes % 60,
        )

    def to_datetime(self) -> datetime:
        """This DateAndTime as an aware ``datetime``."""
        offset = timedelta(hours=self.utc_hours, minutes=self.utc_minutes)
        zone = UTC if not offset else timezone(-offset if self.direction == "-" else offset)
        return datetime(
            self.year,
            self.month,
            self.day,
            self.hour,
            self.minute,
            self.second,
            self.deci_seconds * 100_000,
            tzinfo=zone,
        )


@dataclass
class Attribute:
    """One attribute: its name and its values in order (a 1setOf has several)."""

    name: str
    values: list[Value]

    @property
    def value(self) -> object:
        """The first value's Python value (the common case of a single-valued attribute)."""
        return self.values[0].value

    @property
    def tag(self) -> int:
        """The first value's tag."""
        return self.values[0].tag


#: A collection value: its member attributes in order.
Collection = list[Attribute]

#: What a :class:`Value` holds, by tag: int (integer, enum), bool, bytes (octetString,
#: out-of-band, unknown tags), str (character strings), DateTime, Resolution, Range,
#: StringWithLanguage or Collection.
PyValue = int | bool | bytes | str | DateTime | Resolution | Range | StringWithLanguage | Collection


@dataclass
class Value:
    """One value and its value tag (an ``Attribute``'s values may have different tags)."""

    tag: int
    value: PyValue

    # Constructors named in IPP's terms, for building messages.
    @classmethod
    def integer(cls, n: int) -> Value:
        return cls(Tag.INTEGER, n)

    @classmethod
    def enum(cls, n: int) -> Value:
        return cls(Tag.ENUM, n)

    @classmethod
    def boolean(cls, b: bool) -> Value:
        return cls(Tag.BOOLEAN, b)

    @classmethod
    def keyword(cls, s: str) -> Value:
        return cls(Tag.KEYWORD, s)

    @classmethod
    def text(cls, s: str) -> Value:
        return cls(Tag.TEXT, s)

    @classmethod
    def name(cls, s: str) -> Value:
        return cls(Tag.NAME, s)

    @classmethod
    def uri(cls, s: str) -> Value:
        return cls(Tag.URI, s)

    @classmethod
    def out_of_band(cls, tag: int) -> Value:
        """``unknown``, ``no-value``, ``unsupported``…: a tag with no value bytes."""
        return cls(tag, b"")


def attr(name: str, tag: int, *values: PyValue) -> Attribute:
    """An attribute whose values all have ``tag``: ``attr("job-id", Tag.INTEGER, 7)``."""
    return Attribute(name, [Value(tag, v) for v in values])


@dataclass
class AttributeGroup:
    """One attribute group: its delimiter tag and its attributes in order."""

    tag: int
    attributes: list[Attribute] = field(default_factory=list)

    def get(self, name: str) -> Attribute | None:
        """The attribute called ``name``, or None."""
        for a in self.attributes:
            if a.name == name:
                return a
        return None

    def set(self, attribute: Attribute) -> None:
        """Replace the attribute of that name where it stands, or append it."""
        for i, a in enumerate(self.attributes):
            if a.name == attribute.name:
                self.attributes[i] = attribute
                return
        self.attributes.append(attribute)

    def remove(self, name: str) -> bool:
        """Remove every attribute called ``name``; True if there was one."""
        before = len(self.attributes)
        self.attributes = [a for a in self.attributes if a.name != name]
        return len(self.attributes) != before

    def names(self) -> list[str]:
        """The attribute names in order."""
        return [a.name for a in self.attributes]


def strings(a: Attribute | None) -> Sequence[str]:
    """The string values of an attribute (empty when it is absent)."""
    if a is None:
        return []
    return [v.value for v in a.values if isinstance(v.value, str)]
