"""The PDF page count at submission (edgeprint/documents/check.py): bounded work on hostile page trees.

The HTTP answers for these files are in tests/test_bad_input.py; here are the limits
themselves, and how much of a file the check looks at.
"""

from __future__ import annotations

import io
from typing import Any

import pypdf
import pytest

from edgeprint import documents, errors
from testbed.pdfs import (
    make_deep_page_tree_pdf,
    make_encrypted_pdf,
    make_lying_count_pdf,
    make_pages_pdf,
    make_pdf,
    make_repeated_kids_pdf,
    raw_pdf,
)

CATALOG = b"<< /Type /Catalog /Pages 2 0 R >>"
PAGE = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 72 72] >>"


def count(pdf: bytes, max_pages: int = 200) -> int:
    return documents.count_pages(io.BytesIO(pdf), max_pages)


def refused(pdf: bytes, max_pages: int = 200) -> errors.DocumentRejected:
    with pytest.raises(errors.DocumentRejected) as info:
        count(pdf, max_pages)
    return info.value


@pytest.fixture
def resolved(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Object numbers pypdf is asked to resolve, in order (the work the check does)."""
    seen: list[int] = []
    real = pypdf.PdfReader.get_object

    def counting(self: pypdf.PdfReader, indirect: Any) -> Any:
        seen.append(indirect if isinstance(indirect, int) else indirect.idnum)
        return real(self, indirect)

    monkeypatch.setattr(pypdf.PdfReader, "get_object", counting)
    return seen


def test_ordinary_documents_are_counted() -> None:
    assert count(make_pdf()) == 1
    assert count(make_pages_pdf(7)) == 7
    assert count(make_pages_pdf(200)) == 200


def test_counting_stops_one_page_past_the_limit(resolved: list[int]) -> None:
    """1,000 real pages, limit 10: the 11th page ends the check; the other 989 are never read."""
    problem = refused(make_lying_count_pdf(1000, 1000), max_pages=10)
    assert (problem.slug, problem.detail) == (
        "too-many-pages",
        "the PDF has more than 10 pages; at most 10 are accepted (server.max_document_pages)",
    )
    pages_read = {n for n in resolved if n >= 3}  # objects 3… are the pages
    assert len(pages_read) == 11


def test_the_same_page_listed_100000_times_ends_at_its_second_mention(
    resolved: list[int],
) -> None:
    problem = refused(make_repeated_kids_pdf(100_000))
    assert problem.slug == "document-unreadable"
    assert "the page tree is malformed (a page or node appears twice)" in problem.detail
    assert resolved.count(3) <= 2


def test_count_is_not_trusted() -> None:
    assert count(make_lying_count_pdf(1, 10**6)) == 1
    assert count(make_lying_count_pdf(3, 1)) == 3


@pytest.mark.parametrize(("depth", "accepted"), [(1, True), (64, True), (65, False)])
def test_page_tree_depth_limit(depth: int, accepted: bool) -> None:
    pdf = make_deep_page_tree_pdf(depth)
    if accepted:
        assert count(pdf) == 1
    else:
        assert "nested more than 64 levels deep" in refused(pdf).detail


def test_deep_tree_is_refused_after_64_levels(resolved: list[int]) -> None:
    assert "nested more than 64 levels deep" in refused(make_deep_page_tree_pdf(5000)).detail
    assert len(set(resolved)) <= 64 + 2


def test_entries_that_are_not_pages_count_towards_a_bound() -> None:
    """Nulls and empty nodes are skipped (as pypdf does) but not for ever: 2 × limit + 1000."""
    empty_nodes = range(4, 4 + 1100)
    root = b"<< /Type /Pages /Kids [3 0 R " + b" ".join(b"%d 0 R" % i for i in empty_nodes)
    root += b"] /Count 1 >>"
    pdf = raw_pdf([CATALOG, root, PAGE, *(b"<< /Type /Pages /Kids [] >>" for _ in empty_nodes)])
    assert count(pdf, max_pages=100) == 1  # 1,101 entries ≤ 1,200
    assert "more than 1002 entries" in refused(pdf, max_pages=1).detail
    nulls = b"<< /Type /Pages /Kids [" + b"null " * 5000 + b"3 0 R] /Count 1 >>"
    assert "more than 1400 entries" in refused(raw_pdf([CATALOG, nulls, PAGE])).detail


def test_damaged_kids_are_skipped_as_pypdf_does() -> None:
    root = b"<< /Type /Pages /Kids [null 3 0 R 42 << >> 9 0 R] /Count 2 >>"
    assert count(raw_pdf([CATALOG, root, PAGE])) == 1


def test_a_page_without_type_is_a_page_and_an_odd_type_is_ignored() -> None:
    root = b"<< /Type /Pages /Kids [3 0 R 4 0 R] /Count 2 >>"
    untyped = b"<< /Parent 2 0 R /MediaBox [0 0 72 72] >>"
    odd = b"<< /Type /Annot /Parent 2 0 R >>"
    assert count(raw_pdf([CATALOG, root, untyped, odd])) == 1


def test_encrypted_is_reported_before_the_tree_is_walked() -> None:
    assert refused(make_encrypted_pdf()).slug == "document-encrypted"


def test_no_pages_and_no_page_tree() -> None:
    assert refused(make_pages_pdf(0)).detail == "the PDF has no pages"
    no_tree = raw_pdf([b"<< /Type /Catalog >>"])
    assert refused(no_tree).detail == "the PDF has no pages"
    not_array = raw_pdf([CATALOG, b"<< /Type /Pages /Kids 3 0 R >>", PAGE])
    assert "/Kids is not an array" in refused(not_array).detail
