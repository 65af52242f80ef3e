"""A lossless IPP message codec (RFC 8010, IPP/1.1 to 2.x).

``parse(bytes)`` gives an :class:`IppMessage` that keeps everything the bytes say:
the version, the operation-id or status-code, the request-id, every attribute
group in order (a group tag may repeat: one job group per job in a Get-Jobs
answer), every attribute in order with each value's own value tag, and the data
after end-of-attributes. ``message.encode()`` gives the same bytes back for
every valid message, so a test proxy can parse a printer's answer, change one
attribute and pass the rest through untouched.

The values are :mod:`edgeprint.ipp.values`, the tags and codes :mod:`edgeprint.ipp.names`.

pyipp (the client side, in ``printers/ipp.py``) builds and reads IPP for the
operations edgeprint sends; it folds groups into dicts and drops value tags, so
it cannot re-encode what it reads. This module is for the places that need the
exact message: the IPP server and tests that stand between edgeprint and a
printer.

Malformed or truncated input raises :class:`edgeprint.errors.IppParseError`
(never another exception) naming the byte offset and what was expected there.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass, field

from edgeprint import errors
from edgeprint.ipp.names import END_OF_ATTRIBUTES, GroupTag, Tag
from edgeprint.ipp.values import (
    Attribute,
    AttributeGroup,
    Collection,
    DateTime,
    PyValue,
    Range,
    Resolution,
    StringWithLanguage,
    Value,
    attr,
)

_INTEGER_TAGS = frozenset({Tag.INTEGER, Tag.ENUM})
#: Character-string tags whose value is one UTF-8 string.
_STRING_TAGS = frozenset(range(0x40, 0x60)) - {Tag.MEMBER_ATTR_NAME}


# --- the message ----------------------------------------------------------------------


@dataclass
class IppMessage:
    """An IPP request or response. ``code`` is the operation-id of a request and the
    status-code of a response (the same two bytes of the header)."""

    version: tuple[int, int]
    code: int
    request_id: int
    groups: list[AttributeGroup] = field(default_factory=list)
    data: bytes = b""

    @property
    def operation_id(self) -> int:
        return self.code

    @property
    def status_code(self) -> int:
        return self.code

    @status_code.setter
    def status_code(self, value: int) -> None:
        self.code = value

    def group(self, tag: int) -> AttributeGroup | None:
        """The first group with this tag, or None."""
        for g in self.groups:
            if g.tag == tag:
                return g
        return None

    def groups_of(self, tag: int) -> list[AttributeGroup]:
        """Every group with this tag, in order (the job groups of a Get-Jobs answer)."""
        return [g for g in self.groups if g.tag == tag]

    def get(self, group: int, name: str) -> Attribute | None:
        """The attribute ``name`` of the first group tagged ``group``, or None."""
        g = self.group(group)
        return None if g is None else g.get(name)

    def value(self, group: int, name: str) -> object:
        """The first value of that attribute, or None when it is absent."""
        a = self.get(group, name)
        return None if a is None else a.value

    def set(self, group: int, attribute: Attribute) -> None:
        """Put ``attribute`` in the first group tagged ``group`` (created at its place in the
        usual order — operation first — when the message has none)."""
        g = self.group(group)
        if g is None:
            g = AttributeGroup(group)
            if group == GroupTag.OPERATION:
                self.groups.insert(0, g)
            else:
                self.groups.append(g)
        g.set(attribute)

    def remove(self, group: int, name: str) -> bool:
        """Remove ``name`` from every group tagged ``group``; True if there was one."""
        removed = False
        for g in self.groups_of(group):
            removed = g.remove(name) or removed
        return removed

    def encode(self) -> bytes:
        """The message as bytes (the exact input bytes for a parsed message)."""
        return encode(self)


def request(
    operation: int,
    request_id: int,
    *,
    printer_uri: str | None = None,
    attributes: Iterable[Attribute] = (),
    version: tuple[int, int] = (2, 0),
    language: str = "en",
    data: bytes = b"",
) -> IppMessage:
    """A request with the operation attributes RFC 8011 §4.1.4 puts first:
    attributes-charset, attributes-natural-language, then ``printer-uri``."""
    ops = AttributeGroup(
        GroupTag.OPERATION,
        [
            attr("attributes-charset", Tag.CHARSET, "utf-8"),
            attr("attributes-natural-language", Tag.NATURAL_LANGUAGE, language),
        ],
    )
    if printer_uri is not None:
        ops.attributes.append(attr("printer-uri", Tag.URI, printer_uri))
    ops.attributes.extend(attributes)
    return IppMessage(version, operation, request_id, [ops], data)


def response(
    status: int,
    request_id: int,
    *,
    version: tuple[int, int] = (2, 0),
    status_message: str | None = None,
    language: str = "en",
) -> IppMessage:
    """A response with its operation group (charset, language, optional status-message)."""
    ops = AttributeGroup(
        GroupTag.OPERATION,
        [
            attr("attributes-charset", Tag.CHARSET, "utf-8"),
            attr("attributes-natural-language", Tag.NATURAL_LANGUAGE, language),
        ],
    )
    if status_message is not None:
        ops.attributes.append(attr("status-message", Tag.TEXT, status_message))
    return IppMessage(version, status, request_id, [ops])


# --- parsing --------------------------------------------------------------------------


class _Reader:
    """Bytes and a cursor; every short read is an IppParseError at the right offset."""

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.pos = 0

    def take(self, n: int, what: str) -> bytes:
        end = self.pos + n
        if end > len(self.buf):
            raise errors.IppParseError(
                self.pos,
                f"{what} ({n} bytes; only {len(self.buf) - self.pos} left)",
                truncated=True,
            )
        out = self.buf[self.pos : end]
        self.pos = end
        return out

    def u8(self, what: str) -> int:
        return self.take(1, what)[0]

    def u16(self, what: str) -> int:
        hi, lo = self.take(2, what)
        return hi << 8 | lo


def _decode_str(raw: bytes) -> str:
    # surrogateescape keeps even invalid UTF-8 byte for byte.
    return raw.decode("utf-8", "surrogateescape")


def _encode_str(s: str) -> bytes:
    return s.encode("utf-8", "surrogateescape")


def _decode_value(tag: int, raw: bytes, offset: int) -> PyValue:
    """The Python value of one value's bytes; ``offset`` is where those bytes start."""
    n = len(raw)

    def need(size: int, what: str) -> None:
        if n != size:
            raise errors.IppParseError(
                offset - 2, f"value-length {size} for {what} (tag 0x{tag:02x}), not {n}"
            )

    if tag in _INTEGER_TAGS:
        need(4, "an integer")
        return int(struct.unpack(">i", raw)[0])
    if tag == Tag.BOOLEAN:
        need(1, "a boolean")
        if raw[0] > 1:
            raise errors.IppParseError(offset, f"boolean 0 or 1, not {raw[0]}")
        return raw[0] == 1
    if tag == Tag.DATE_TIME:
        need(11, "a dateTime")
        y, mo, d, h, mi, s, ds, direction, uh, um = struct.unpack(">HBBBBBBcBB", raw)
        if direction not in (b"+", b"-"):
            raise errors.IppParseError(offset + 8, "dateTime direction '+' or '-'")
        return DateTime(y, mo, d, h, mi, s, ds, direction.decode(), uh, um)
    if tag == Tag.RESOLUTION:
        need(9, "a resolution")
        x, y, units = struct.unpack(">iib", raw)
        return Resolution(x, y, units)
    if tag == Tag.RANGE_OF_INTEGER:
        need(8, "a rangeOfInteger")
        lower, upper = struct.unpack(">ii", raw)
        return Range(lower, upper)
    if tag in (Tag.TEXT_WITH_LANGUAGE, Tag.NAME_WITH_LANGUAGE):
        inner = _Reader(raw)
        try:
            language = _decode_str(inner.take(inner.u16("language length"), "language"))
            text = _decode_str(inner.take(inner.u16("text length"), "text"))
        except errors.IppParseError as exc:
            raise errors.IppParseError(offset + exc.offset, exc.expected) from None
        if inner.pos != n:
            raise errors.IppParseError(
                offset + inner.pos, "the end of a string-with-language value"
            )
        return StringWithLanguage(language, text)
    if tag in _STRING_TAGS or tag == Tag.MEMBER_ATTR_NAME:
        return _decode_str(raw)
    # octetString, out-of-band values, and tags this codec does not know: the bytes.
    return raw


def _read_value_header(r: _Reader) -> tuple[int, int, str]:
    """Reads tag, name; returns (tag, offset of the tag, name)."""
    start = r.pos
    tag = r.u8("a value tag")
    if tag == 0x7F:
        raise errors.IppParseError(start, "a value tag (extension tag 0x7f is not supported)")
    name = _decode_str(r.take(r.u16("name-length"), "name"))
    return tag, start, name


def _read_raw(r: _Reader) -> tuple[bytes, int]:
    n = r.u16("value-length")
    at = r.pos
    return r.take(n, "value"), at


def _parse_collection(r: _Reader, depth: int) -> Collection:
    """Members up to and including endCollection; the begCollection value is read."""
    if depth > 32:
        raise errors.IppParseError(r.pos, "at most 32 nested collections")
    members: Collection = []
    current: Attribute | None = None
    while True:
        start = r.pos
        tag = r.u8("memberAttrName, a member value or endCollection")
        if tag < 0x10:
            raise errors.IppParseError(start, "endCollection before the next group")
        name_len = r.u16("name-length")
        if name_len != 0:
            raise errors.IppParseError(start + 1, "name-length 0 inside a collection")
        if tag == Tag.END_COLLECTION:
            raw, at = _read_raw(r)
            if raw:
                raise errors.IppParseError(at - 2, "value-length 0 for endCollection")
            if current is not None and not current.values:
                raise errors.IppParseError(start, f"a value for member {current.name!r}")
            return members
        if tag == Tag.MEMBER_ATTR_NAME:
            raw, at = _read_raw(r)
            if current is not None and not current.values:
                raise errors.IppParseError(start, f"a value for member {current.name!r}")
            if not raw:
                raise errors.IppParseError(at - 2, "a member name (value-length > 0)")
            current = Attribute(_decode_str(raw), [])
            members.append(current)
            continue
        if current is None:
            raise errors.IppParseError(start, "memberAttrName before a member value")
        current.values.append(_read_value(r, tag, depth, start))


def _read_value(r: _Reader, tag: int, depth: int, start: int) -> Value:
    """The value after a tag (at ``start``) and name; a collection with its members."""
    raw, at = _read_raw(r)
    if tag == Tag.BEG_COLLECTION:
        if raw:
            raise errors.IppParseError(at - 2, "value-length 0 for begCollection")
        return Value(tag, _parse_collection(r, depth + 1))
    if tag in (Tag.END_COLLECTION, Tag.MEMBER_ATTR_NAME):
        raise errors.IppParseError(start, f"tag 0x{tag:02x} only inside a collection")
    return Value(tag, _decode_value(tag, raw, at))


def parse(buf: bytes) -> IppMessage:
    """The message in ``buf``; raises IppParseError when it is truncated or malformed."""
    r = _Reader(bytes(buf))
    major = r.u8("version-number (major)")
    minor = r.u8("version-number (minor)")
    code = r.u16("operation-id or status-code")
    request_id = struct.unpack(">i", r.take(4, "request-id"))[0]
    groups: list[AttributeGroup] = []
    group: AttributeGroup | None = None
    current: Attribute | None = None
    while True:
        start = r.pos
        tag = r.u8("a delimiter or value tag (end-of-attributes-tag 0x03 missing)")
        if tag == END_OF_ATTRIBUTES:
            break
        if tag < 0x10:
            if tag == 0x00:
                raise errors.IppParseError(start, "a delimiter tag (0x00 is reserved)")
            group = AttributeGroup(tag)
            groups.append(group)
            current = None
            continue
        if group is None:
            raise errors.IppParseError(start, "an attribute group tag before the first value")
        r.pos = start
        tag, start, name = _read_value_header(r)
        if name:
            current = Attribute(name, [])
            group.attributes.append(current)
        elif current is None:
            raise errors.IppParseError(start + 1, "an attribute name (name-length > 0)")
        current.values.append(_read_value(r, tag, 0, start))
    return IppMessage((major, minor), code, request_id, groups, r.buf[r.pos :])


# --- encoding -------------------------------------------------------------------------


def _u16(n: int, what: str) -> bytes:
    if not 0 <= n <= 0xFFFF:
        raise errors.IppEncodeError(f"{what} of {n} bytes does not fit in 2 bytes")
    return n.to_bytes(2, "big")


def _value_bytes(v: Value) -> bytes:
    """The value bytes; the tag decides which Python type is expected (as when parsing)."""
    tag, x = v.tag, v.value
    if tag == Tag.BOOLEAN:
        if isinstance(x, bool):
            return b"\x01" if x else b"\x00"
    elif tag in _INTEGER_TAGS:
        if isinstance(x, int) and not isinstance(x, bool):
            try:
                return struct.pack(">i", x)
            except struct.error:
                raise errors.IppEncodeError(f"integer {x} does not fit in 4 signed bytes") from None
    elif tag == Tag.DATE_TIME:
        if isinstance(x, DateTime):
            return struct.pack(
                ">HBBBBBBcBB",
                x.year,
                x.month,
                x.day,
                x.hour,
                x.minute,
                x.second,
                x.deci_seconds,
                x.direction.encode(),
                x.utc_hours,
                x.utc_minutes,
            )
    elif tag == Tag.RESOLUTION:
        if isinstance(x, Resolution):
            return struct.pack(">iib", x.x, x.y, x.units)
    elif tag == Tag.RANGE_OF_INTEGER:
        if isinstance(x, Range):
            return struct.pack(">ii", x.lower, x.upper)
    elif tag in (Tag.TEXT_WITH_LANGUAGE, Tag.NAME_WITH_LANGUAGE):
        if isinstance(x, StringWithLanguage):
            lang, text = _encode_str(x.language), _encode_str(x.text)
            return _u16(len(lang), "language") + lang + _u16(len(text), "text") + text
    elif tag in _STRING_TAGS or tag == Tag.MEMBER_ATTR_NAME:
        if isinstance(x, str):
            return _encode_str(x)
    elif isinstance(x, bytes):
        return x
    raise errors.IppEncodeError(f"no encoding for a {type(x).__name__} under tag 0x{tag:02x}")


def _encode_value(out: list[bytes], name: str, v: Value) -> None:
    n = _encode_str(name)
    out.append(bytes([v.tag]) + _u16(len(n), "name") + n)
    if v.tag == Tag.BEG_COLLECTION:
        if not isinstance(v.value, list):
            raise errors.IppEncodeError("a begCollection value must be a list of attributes")
        out.append(b"\x00\x00")
        for member in v.value:
            mname = _encode_str(member.name)
            out.append(bytes([Tag.MEMBER_ATTR_NAME]) + b"\x00\x00")
            out.append(_u16(len(mname), "member name") + mname)
            _encode_values(out, member, in_collection=True)
        out.append(bytes([Tag.END_COLLECTION]) + b"\x00\x00\x00\x00")
        return
    raw = _value_bytes(v)
    out.append(_u16(len(raw), "value") + raw)


def _encode_values(out: list[bytes], a: Attribute, *, in_collection: bool = False) -> None:
    if not a.values:
        raise errors.IppEncodeError(f"attribute {a.name!r} has no value")
    for i, v in enumerate(a.values):
        _encode_value(out, "" if in_collection or i else a.name, v)


def encode(message: IppMessage) -> bytes:
    """The bytes of ``message`` (RFC 8010 §3)."""
    major, minor = message.version
    out = [struct.pack(">BBHi", major, minor, message.code, message.request_id)]
    for g in message.groups:
        out.append(bytes([g.tag]))
        for a in g.attributes:
            if not a.name:
                raise errors.IppEncodeError("an attribute needs a name")
            _encode_values(out, a)
    out.append(bytes([END_OF_ATTRIBUTES]))
    out.append(message.data)
    return b"".join(out)
