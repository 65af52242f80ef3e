"""ZPL checks at submission (pure): the ``^XA…^XZ`` structure and the labels it makes.

A ZPL document (``application/vnd.zebra-zpl``) is sent to the printer unchanged,
so what is checked here is only what a Zebra reads first: label formats, each
opened with ``^XA`` and closed with ``^XZ``, with nothing between them but
whitespace and ``~`` commands (``~SD``, ``~TA``, ``~DG`` downloads…). Binary
junk, a PDF, a format that is never closed, an empty document: refused, with
the byte where it went wrong.

The labels a document makes are counted as a printer would make them: each
format that prints (it draws a field, a graphic or a recalled format) makes its
``^PQ`` quantity (1 when not given), the last ``^PQ`` of the format counting; a
format that only sets the printer up (``^XA^JUS^XZ``), deletes an image, or
stores a format (``^DF``) makes none. The count is stored as the job's
``document_pages`` (labels are the impressions a label printer counts).

Commands are read with the default prefixes ``^`` and ``~`` (a document that
changes them with ``^CC``/``^CT`` is read as the printer would not: it is
refused as unclosed, never passed with a wrong count). Graphic data of ``^GF``
in the binary (``B``) and compressed (``C``) forms is skipped by its byte count,
as the printer reads it. Work is linear in the size of the document (regular
expressions over bytes) and bounded by the label limit: at most
``COMMANDS_PER_LABEL`` commands per label allowed (and ``SPARE_COMMANDS``) are
read — 20 MB of ``^FD`` took 8 s of a core before that bound — and reading stops
at the first label past the limit.
"""

from __future__ import annotations

import re

from edgeprint import errors

ZPL = "application/vnd.zebra-zpl"

#: Most labels one ``^PQ`` can ask for (ZPL II: 1 to 99,999,999).
MAX_PQ = 99_999_999
_PREVIEW_BYTES = 16
_WHITESPACE = b" \t\r\n"
#: A command prefix: ``^`` (format commands) or ``~`` (control commands).
_PREFIX = re.compile(rb"[\^~]")
#: Bytes no ZPL text carries (control characters but tab, line feed, carriage return).
_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
#: Commands that put something on the label (a field, a graphic, a recalled format/image).
_PRINTING = frozenset(
    {b"FD", b"FV", b"GB", b"GC", b"GD", b"GE", b"GF", b"GS", b"XG", b"XF", b"IL", b"IM"}
)
#: ``^GFa,b,c,d,`` then the data; ``b`` is its length in bytes for the forms B and C.
_GF_HEAD = re.compile(rb"([ABCabc])\s*,\s*(\d{1,9})\s*,\s*(\d{0,9})\s*,\s*(\d{0,9})\s*,")
_PQ_QUANTITY = re.compile(rb"\s*(\d{1,9})")
#: Commands read per label allowed (a badge has tens), and beyond them: the bound on the
#: work a document costs (~1 µs a command).
COMMANDS_PER_LABEL = 200
SPARE_COMMANDS = 10_000


class _Commands:
    """The commands a document may still hold before it is refused as too long to read."""

    def __init__(self, max_labels: int) -> None:
        self.limit = COMMANDS_PER_LABEL * max_labels + SPARE_COMMANDS
        self.left = self.limit

    def take(self) -> None:
        self.left -= 1
        if self.left < 0:
            raise _rejected(
                f"it holds more than {self.limit} commands ({COMMANDS_PER_LABEL} per label of "
                f"server.max_zpl_labels and {SPARE_COMMANDS} more are read)"
            )


def _rejected(why: str) -> errors.DocumentRejected:
    return errors.DocumentRejected(
        "document-unreadable", f"the document is not ZPL as sent: {why}; nothing was stored"
    )


def _preview(data: bytes, at: int) -> str:
    shown = data[at : at + _PREVIEW_BYTES]
    return repr(shown)[1:] + ("…" if len(data) > at + _PREVIEW_BYTES else "")


def _skip_space(data: bytes, at: int) -> int:
    while at < len(data) and data[at] in _WHITESPACE:
        at += 1
    return at


def _check_text(data: bytes, start: int, end: int) -> None:
    found = _CONTROL.search(data, start, end)
    if found is not None:
        raise _rejected(f"a control byte 0x{found.group()[0]:02x} at byte {found.start()}")


def _name(data: bytes, at: int) -> bytes:
    """The two letters of the command whose prefix is at ``at`` (upper case)."""
    return data[at + 1 : at + 3].upper()


def _next_prefix(data: bytes, at: int) -> int:
    found = _PREFIX.search(data, at)
    return len(data) if found is None else found.start()


def _label_format(data: bytes, opened: int, commands: _Commands) -> tuple[int, int]:
    """Read the format opened by ``^XA`` at ``opened``: (labels it makes, where it ends)."""
    at = opened + 3
    quantity = 1
    prints = stores = False
    while True:
        commands.take()
        cmd = _next_prefix(data, at)
        _check_text(data, at, cmd)
        if cmd == len(data):
            raise _rejected(f"the label opened with ^XA at byte {opened} is not closed with ^XZ")
        _check_text(data, cmd, min(cmd + 3, len(data)))
        name = _name(data, cmd)
        at = cmd + 3
        if name == b"XZ" and data[cmd] == ord("^"):
            return (quantity if prints and not stores else 0), at
        if name == b"XA" and data[cmd] == ord("^"):
            raise _rejected(
                f"^XA at byte {cmd} opens a label inside the one opened at byte {opened} "
                "(a ^XZ is missing)"
            )
        prints |= name in _PRINTING
        if name == b"DF":
            stores = True
        elif name == b"PQ":
            got = _PQ_QUANTITY.match(data, at)
            quantity = min(max(int(got.group(1)), 1), MAX_PQ) if got else 1
        elif name == b"GF":
            head = _GF_HEAD.match(data, at)
            if head is not None and head.group(1).upper() in (b"B", b"C"):
                at = head.end() + int(head.group(2))  # binary data: skipped, as the printer does
                if at > len(data):
                    raise _rejected(
                        f"the ^GF graphic at byte {cmd} announces {int(head.group(2))} bytes "
                        "and the document ends first"
                    )


def count_labels(data: bytes, max_labels: int) -> int:
    """Labels the ZPL document ``data`` makes (each format's ``^PQ`` quantity, summed).

    Raises errors.DocumentRejected: ``document-unreadable`` (empty, not
    ``^XA…^XZ`` formats with only whitespace and ``~`` commands between them, a
    format never closed, control bytes, or no format that prints a label),
    ``too-many-labels`` (more than ``max_labels``; counting stops there).
    """
    at = _skip_space(data, 0)
    if at == len(data):
        raise _rejected("it is empty" if not data else "it holds only whitespace")
    labels = formats = 0
    commands = _Commands(max_labels)
    while at < len(data):
        commands.take()
        if data.startswith(b"~", at):  # a control command between formats, up to the next one
            end = _next_prefix(data, at + 1)
            _check_text(data, at, end)
            at = end
        elif data[at : at + 3].upper() == b"^XA":
            made, at = _label_format(data, at, commands)
            formats += 1
            labels += made
            if labels > max_labels:
                raise errors.DocumentRejected(
                    "too-many-labels",
                    f"the ZPL document makes more than {max_labels} labels (^PQ quantities "
                    f"counted); at most {max_labels} are accepted (server.max_zpl_labels)",
                )
        else:
            where = "it starts" if at == _skip_space(data, 0) and formats == 0 else "then"
            raise _rejected(
                f"{where} with {_preview(data, at)} at byte {at}, where a label (^XA) or a "
                "~ command was expected"
            )
        at = _skip_space(data, at)
    if labels == 0:
        raise _rejected(
            f"none of its {formats} label format(s) prints anything (no field, graphic or "
            "recalled format)"
        )
    return labels
