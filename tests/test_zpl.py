"""The ZPL check at submission (edgeprint.documents.zpl): structure and the labels counted."""

from __future__ import annotations

import hypothesis
import hypothesis.strategies as st
import pytest

from edgeprint import errors
from edgeprint.documents import zpl
from testbed import pdfs

BADGE = b"^XA\n^FO50,50^A0N,60,60^FDAda Lovelace^FS\n^XZ\n"


def _rejected(data: bytes, max_labels: int = 1000) -> errors.DocumentRejected:
    with pytest.raises(errors.DocumentRejected) as caught:
        zpl.count_labels(data, max_labels)
    return caught.value


def test_one_badge_is_one_label() -> None:
    """A single format with one field makes one label."""
    assert zpl.count_labels(BADGE, 1000) == 1


def test_pq_quantities_are_summed_over_formats() -> None:
    """Each format makes its ^PQ quantity (the last ^PQ of the format), 1 without one."""
    doc = (
        b"^XA^FO0,0^FDa^FS^PQ3^XZ"
        b"^XA^FO0,0^FDb^FS^PQ9,0,1,Y^PQ2^XZ"  # the last ^PQ counts
        b"^XA^FO0,0^FDc^FS^XZ"
    )
    assert zpl.count_labels(doc, 1000) == 3 + 2 + 1


def test_tilde_commands_and_whitespace_between_formats_are_allowed() -> None:
    """~ commands (darkness, a graphic download) and blank lines may stand between formats."""
    doc = b"\r\n~SD25\n~DGR:LOGO.GRF,4,1,FFFF00FF\n\n" + BADGE + b"~JA\n" + BADGE + b"\n"
    assert zpl.count_labels(doc, 1000) == 2


def test_set_up_image_delete_and_stored_formats_make_no_label() -> None:
    """Formats that only configure, delete an image or store a format (^DF) print nothing."""
    doc = (
        b"^XA^MMT^JUS^XZ"
        b"^XA^IDR:LPRINT.GRF^FS^XZ"
        b"^XA^DFR:BADGE.ZPL^FS^FO0,0^FN1^FS^XZ"
        b"^XA^XFR:BADGE.ZPL^FN1^FDGrace^FS^PQ4^XZ"
    )
    assert zpl.count_labels(doc, 1000) == 4


def test_lowercase_commands_are_read() -> None:
    assert zpl.count_labels(b"^xa^fo0,0^fdx^fs^pq2^xz", 1000) == 2


def test_binary_graphic_data_is_skipped_by_its_byte_count() -> None:
    """^GFB data (raw bytes, may hold ^, ~ and control bytes) is skipped as the printer
    reads it: a ^XZ inside it neither ends the label nor is refused."""
    blob = b"^XZ\x00\x01~XA\xff"
    doc = b"^XA^FO0,0^GFB," + str(len(blob)).encode() + b",8,1," + blob + b"^FS^PQ2^XZ"
    assert zpl.count_labels(doc, 1000) == 2


def test_a_binary_graphic_cut_short_is_refused() -> None:
    exc = _rejected(b"^XA^FO0,0^GFB,500,8,1,\x00\x01^FS^XZ")
    assert exc.slug == "document-unreadable"
    assert "^GF graphic at byte 9 announces 500 bytes" in exc.detail


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"", "it is empty"),
        (b" \r\n\t", "it holds only whitespace"),
        (pdfs.make_pdf(), "it starts with '%PDF-"),
        (b"\x00\x01\x02binary", "it starts with '\\x00\\x01\\x02binary' at byte 0"),
        (b"^XA^FO0,0^FDcut here", "the label opened with ^XA at byte 0 is not closed with ^XZ"),
        (
            b"^XA^FDa^FS^XA^FDb^FS^XZ",
            "^XA at byte 10 opens a label inside the one opened at byte 0",
        ),
        (BADGE + b"hello", "then with 'hello' at byte 45"),
        (b"^FO0,0^FDa^FS^XZ", "it starts with '^FO0,0"),
        (b"^XA^FDa\x07b^FS^XZ", "a control byte 0x07 at byte 7"),
        (b"^XA^MMT^XZ", "none of its 1 label format(s) prints anything"),
    ],
)
def test_what_is_not_zpl_is_refused_with_where(data: bytes, why: str) -> None:
    """Empty, a PDF, binary junk, an unclosed or nested format, stray text or commands
    between formats, control bytes, or nothing that prints: document-unreadable, saying
    what and where."""
    exc = _rejected(data)
    assert exc.slug == "document-unreadable"
    assert exc.detail.startswith("the document is not ZPL as sent: ")
    assert why in exc.detail, exc.detail
    assert exc.detail.endswith("; nothing was stored")


def test_ten_thousand_labels_are_too_many() -> None:
    """A ^PQ10000 badge (or 10,000 formats) passes max_labels=1000: too-many-labels."""
    for doc in (b"^XA^FO0,0^FDa^FS^PQ10000^XZ", BADGE * 10_000):
        exc = _rejected(doc, 1000)
        assert exc.slug == "too-many-labels"
        assert exc.detail == (
            "the ZPL document makes more than 1000 labels (^PQ quantities counted); at most "
            "1000 are accepted (server.max_zpl_labels)"
        )
    assert zpl.count_labels(b"^XA^FO0,0^FDa^FS^PQ1000^XZ", 1000) == 1000


def test_a_document_of_too_many_commands_is_refused_unread() -> None:
    """The work is bounded by the label limit: a format of more commands than 200 per
    label allowed (and 10,000 more) is refused; one of exactly that many is read."""
    limit = zpl.COMMANDS_PER_LABEL * 2 + zpl.SPARE_COMMANDS
    fields = limit - 2  # each ^FD is a command, ^XA and ^XZ are two more
    assert zpl.count_labels(b"^XA" + b"^FD" * fields + b"^XZ", 2) == 1
    exc = _rejected(b"^XA" + b"^FD" * (fields + 1) + b"^XZ", 2)
    assert exc.slug == "document-unreadable"
    assert f"it holds more than {limit} commands (200 per label" in exc.detail


def test_a_pq_past_the_zpl_range_is_capped() -> None:
    assert zpl.count_labels(b"^XA^FDa^FS^PQ999999999^XZ", 10**9) == zpl.MAX_PQ


_text = st.text(
    alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E, exclude_characters="^~"),
    max_size=20,
)


@st.composite
def _documents(draw: st.DrawFn) -> tuple[bytes, int]:
    """A ZPL document of printing formats with random ^PQ, fields, ~ commands and
    whitespace between them; and the labels it makes."""
    parts: list[bytes] = []
    expected = 0
    for _ in range(draw(st.integers(1, 6))):
        parts.append(draw(st.sampled_from([b"", b"\n", b"\r\n", b"~SD20\n", b" ~JA "])))
        quantity = draw(st.one_of(st.none(), st.integers(1, 50)))
        fields = b"".join(
            b"^FO10,10^A0N,20,20^FD" + draw(_text).encode() + b"^FS"
            for _ in range(draw(st.integers(1, 3)))
        )
        pq = b"" if quantity is None else b"^PQ" + str(quantity).encode()
        parts.append(b"^XA" + fields + pq + b"^XZ")
        expected += quantity or 1
    return b"".join(parts), expected


@hypothesis.given(_documents())
def test_counted_labels_are_the_sum_of_quantities(doc: tuple[bytes, int]) -> None:
    """Any well-formed document: the count is the sum of its formats' ^PQ (1 by default)."""
    data, expected = doc
    assert zpl.count_labels(data, 10_000) == expected


@hypothesis.given(_documents(), st.data())
def test_a_document_cut_anywhere_inside_a_format_is_refused(
    doc: tuple[bytes, int], data: st.DataObject
) -> None:
    """Truncated in the middle of its last format (a ^XZ lost on the way): refused, never
    counted."""
    raw, _ = doc
    last = raw.rindex(b"^XA")
    cut = data.draw(st.integers(last + 1, len(raw) - 2))  # a cut leaving ^XZ whole is not one
    with pytest.raises(errors.DocumentRejected) as caught:
        zpl.count_labels(raw[:cut], 10_000)
    assert caught.value.slug == "document-unreadable"


@hypothesis.given(st.binary(max_size=200))
def test_any_bytes_either_count_or_are_refused(raw: bytes) -> None:
    """Whatever the bytes, the check answers a count ≥ 1 or DocumentRejected: nothing else."""
    slug = None
    try:
        assert zpl.count_labels(raw, 1000) >= 1
    except errors.DocumentRejected as exc:
        slug = exc.slug
    assert slug in (None, "document-unreadable", "too-many-labels")
