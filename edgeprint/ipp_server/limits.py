"""The longest value of each IPP attribute syntax in octets (RFC 8011 §5.1); values fitted to it.

One table (:data:`MAX_OCTETS`, value tag → MAX) and two uses at the queues' boundary:

- a request: :func:`too_long` names the attributes whose values exceed their syntax's
  limit; the queue refuses the request with ``client-error-request-value-too-long``
  (0x0409, RFC 8011 Appendix B.1.4.10: the status for a client-supplied value longer than
  the maximum its attribute allows; RFC 3196 §3.1.2.1.5 has a Printer reject such a value
  with it), those attributes in the unsupported-attributes group. Not 0x040B
  (attributes-or-values-not-supported): the value is not unsupported, it breaks its syntax.
  Except :data:`CUT`, the names that only describe a job (nothing matches on them, nothing
  is decided by them): their values are cut at a UTF-8 boundary and the cut is what is
  stored and echoed. A print is never lost over its label (issue 24's rule for titles); a
  client that counts characters, not octets, sends a 100-character file name in CJK script
  (300 octets) as its job-name. ``requesting-user-name`` is refused, not cut: two names
  with the same first 255 octets would become one owner, who may cancel the other's jobs.
- a response: :func:`fit_message` cuts every value edgeprint writes (its own messages, a
  printer's or a document's words, a PDF's /Title) to its attribute's limit, so no
  answer ever breaks RFC 8011's limits whatever a printer or a document said.

Octets are counted as the codec encodes: UTF-8, where a byte the codec kept from invalid
UTF-8 (a ``surrogateescape`` code point) is one octet.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

from edgeprint.ipp.codec import IppMessage
from edgeprint.ipp.names import Tag
from edgeprint.ipp.values import Attribute, StringWithLanguage, Value

#: An attribute syntax's longest value in octets, by value tag (RFC 8011 §5.1; for the
#: ``…WithLanguage`` tags, the text or name part; its language is a naturalLanguage).
MAX_OCTETS: dict[int, int] = {
    Tag.TEXT: 1023,  # textWithoutLanguage, §5.1.2.1
    Tag.TEXT_WITH_LANGUAGE: 1023,  # §5.1.2.2
    Tag.NAME: 255,  # nameWithoutLanguage, §5.1.3.1
    Tag.NAME_WITH_LANGUAGE: 255,  # §5.1.3.2
    Tag.KEYWORD: 255,  # §5.1.4
    Tag.URI: 1023,  # §5.1.6
    Tag.URI_SCHEME: 63,  # §5.1.7
    Tag.CHARSET: 63,  # §5.1.8
    Tag.NATURAL_LANGUAGE: 63,  # §5.1.9
    Tag.MIME_MEDIA_TYPE: 255,  # §5.1.10
    Tag.OCTET_STRING: 1023,  # §5.1.11
    Tag.MEMBER_ATTR_NAME: 255,  # a member attribute's name: a keyword (RFC 8010, collections)
}
#: Attributes whose definition narrows their syntax's MAX: status-message text(255)
#: (RFC 8011 §4.1.6.2); printer-name name(127), printer-location, -info, -make-and-model
#: text(127) (§5.4.4, §5.4.5, §5.4.6, §5.4.9).
ATTRIBUTE_MAX_OCTETS: dict[str, int] = {
    "status-message": 255,
    "printer-name": 127,
    "printer-location": 127,
    "printer-info": 127,
    "printer-make-and-model": 127,
}
_TEXT_TAGS = frozenset({Tag.TEXT, Tag.TEXT_WITH_LANGUAGE, Tag.NAME, Tag.NAME_WITH_LANGUAGE})
#: Request attributes cut rather than refused (see the module's doc): descriptive names.
CUT = frozenset({"job-name", "document-name"})
#: The language of a ``…WithLanguage`` value is a naturalLanguage.
_LANGUAGE_MAX = MAX_OCTETS[Tag.NATURAL_LANGUAGE]
#: The longest character is 4 octets: a string this short or shorter always fits.
_MAX_CHAR_OCTETS = 4
#: Zero-width joiner: the character after it belongs to the one before (emoji sequences).
_ZWJ = "\u200d"


def limit(name: str, tag: int) -> int | None:
    """The longest value of attribute ``name`` with value tag ``tag`` in octets; None: the
    syntax has no length limit of its own (integers, booleans, dates: fixed sizes)."""
    syntax = MAX_OCTETS.get(tag)
    if syntax is None:
        return None
    narrower = ATTRIBUTE_MAX_OCTETS.get(name)
    return syntax if narrower is None or tag not in _TEXT_TAGS else min(syntax, narrower)


def _char_octets(ch: str) -> int:
    o = ord(ch)
    if o < 0x80:
        return 1
    if o < 0x800:
        return 2
    if 0xDC80 <= o <= 0xDCFF:  # a byte the codec kept from invalid UTF-8 (surrogateescape)
        return 1
    return 3 if o < 0x10000 else 4


def octets(value: str) -> int:
    """The octets of ``value`` as the codec encodes it."""
    try:
        return len(value.encode("utf-8", "surrogateescape"))
    except UnicodeEncodeError:  # a lone surrogate the codec could not encode either
        return sum(map(_char_octets, value))


def _continues(value: str, i: int) -> bool:
    """Whether the character at ``i`` belongs to the character before it (a combining
    mark, a variation selector, an emoji modifier, a joiner or what a joiner joins)."""
    ch = value[i]
    o = ord(ch)
    return (
        unicodedata.category(ch) in ("Mn", "Mc", "Me")
        or ch == _ZWJ
        or 0xFE00 <= o <= 0xFE0F
        or 0xE0100 <= o <= 0xE01EF
        or 0x1F3FB <= o <= 0x1F3FF
        or (i > 0 and value[i - 1] == _ZWJ)
    )


def fit(value: str, max_octets: int) -> str:
    """``value`` cut to at most ``max_octets`` octets: a prefix that never splits a
    character, nor (when it can) takes a letter without its combining marks or half an
    emoji sequence; ``value`` itself when it fits."""
    if len(value) * _MAX_CHAR_OCTETS <= max_octets or octets(value) <= max_octets:
        return value
    total, cut = 0, 0
    for ch in value:
        n = _char_octets(ch)
        if total + n > max_octets:
            break
        total += n
        cut += 1
    end = cut
    while end > 0 and _continues(value, end):
        end -= 1  # back to the start of the cluster the cut went through
    return value[: end if end > 0 else cut]  # one cluster longer than the limit: cut it


def _value_octets(v: Value) -> tuple[int, int] | None:
    """(octets, octets of its language part) of a string value; None for other values."""
    x = v.value
    if isinstance(x, str):
        return octets(x), 0
    if isinstance(x, StringWithLanguage):
        return octets(x.text), octets(x.language)
    if isinstance(x, bytes) and v.tag == Tag.OCTET_STRING:
        return len(x), 0
    return None


def _over(name: str, values: Iterable[Value]) -> bool:
    """Whether any of these values of attribute ``name`` (or of a collection's members)
    exceeds its syntax's limit."""
    for v in values:
        if isinstance(v.value, list):  # a collection: its members' names and values
            for member in v.value:
                if octets(member.name) > MAX_OCTETS[Tag.MEMBER_ATTR_NAME]:
                    return True
                if _over(member.name, member.values):
                    return True
            continue
        size = _value_octets(v)
        most = MAX_OCTETS.get(v.tag)
        if size is not None and most is not None and (size[0] > most or size[1] > _LANGUAGE_MAX):
            return True
    return False


def too_long(message: IppMessage) -> list[str]:
    """The names of the request's attributes (any group) with a value longer than its
    syntax allows, in order, each once; the :data:`CUT` names are never among them."""
    out: list[str] = []
    for group in message.groups:
        for a in group.attributes:
            if a.name not in CUT and a.name not in out and _over(a.name, a.values):
                out.append(a.name)
    return out


def _fit_value(name: str, v: Value) -> Value:
    x = v.value
    if isinstance(x, list):
        members = [fit_attribute(m) for m in x]
        unchanged = all(new is old for new, old in zip(members, x, strict=True))
        return v if unchanged else Value(v.tag, members)
    most = limit(name, v.tag)
    if most is None:
        return v
    if isinstance(x, str):
        cut = fit(x, most)
        return v if cut is x else Value(v.tag, cut)
    if isinstance(x, StringWithLanguage):
        text, language = fit(x.text, most), fit(x.language, _LANGUAGE_MAX)
        if text is x.text and language is x.language:
            return v
        return Value(v.tag, StringWithLanguage(language, text))
    if isinstance(x, bytes) and len(x) > most:
        return Value(v.tag, x[:most])
    return v


def fit_attribute(a: Attribute) -> Attribute:
    """``a`` with every value cut to its limit (the same object when all fit)."""
    values: list[Value] | None = None
    for i, v in enumerate(a.values):
        new = _fit_value(a.name, v)
        if new is not v:
            values = values or list(a.values)
            values[i] = new
    return a if values is None else Attribute(a.name, values)


def fit_message(message: IppMessage) -> IppMessage:
    """``message`` (changed in place, and returned) with every value within its limit."""
    for group in message.groups:
        attrs = group.attributes
        for i, a in enumerate(attrs):
            fitted = fit_attribute(a)
            if fitted is not a:
                attrs[i] = fitted
    return message
