"""PDF checks at submission, with pypdf: readable, not encrypted, a sane page count.

Printers are not trusted to cope with a broken or encrypted PDF: such a job
would fail at the printer (or print garbage) long after the kiosk was told
"accepted". :func:`count_pages` costs ~0.15 ms for a small badge; the service runs it
in a worker thread for documents over 256 KiB.

pypdf parses the file; the page tree is walked here rather than with
``len(reader.pages)``, which builds a page object for every leaf before it can be
counted: a 600 KB file whose one /Pages node lists the same page 100,000 times
kept the event loop busy for ~0.6 s. The walk stops at ``max_pages + 1`` leaves,
refuses a page or node reached twice (a DAG or a cycle), and bounds the entries it
looks at and the depth, so its work is bounded by the page limit, not by the file.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

import pypdf
from pypdf.generic import ArrayObject, DictionaryObject, IndirectObject, NullObject, PdfObject

from edgeprint import errors
from edgeprint.stock import PageSizes
from edgeprint.titles import clean_title

# pypdf logs every repair it makes to a broken file; a hostile upload must not flood
# the appliance log (the 422 answer carries the reason).
logging.getLogger("pypdf").setLevel(logging.ERROR)

_DETAIL_CHARS = 200
#: The deepest page tree accepted (ISO 32000 sets no limit; writers nest a few levels).
MAX_TREE_DEPTH = 64
#: Page-tree entries looked at beyond twice the page limit (empty or odd nodes).
_SPARE_ENTRIES = 1000


#: hundredths of a millimetre per PostScript point (a PDF's user-space unit)
_HMM_PER_POINT = 2540 / 72


@dataclass(frozen=True, slots=True)
class PdfFacts:
    """What the submission check learnt of a PDF: its pages and their sizes, its title."""

    pages: int
    #: every page's visible size (its /CropBox, else /MediaBox, inherited as ISO 32000
    #: §7.7.3.4 says, times /UserUnit); None when no page states a readable one
    sizes: PageSizes | None
    #: its document information dictionary's /Title (ISO 32000 §14.3.3), cleaned
    #: (:func:`edgeprint.titles.clean_title`); None when it has none worth showing
    title: str | None = None


def count_pages(pdf: BinaryIO, max_pages: int) -> int:
    """Pages of the PDF in the readable binary file ``pdf`` (see :func:`inspect_pdf`)."""
    return inspect_pdf(pdf, max_pages).pages


def inspect_pdf(pdf: BinaryIO, max_pages: int) -> PdfFacts:
    """Pages of the PDF in the readable binary file ``pdf`` (ISO 32000 page tree, via pypdf),
    and the sizes of those pages.

    Raises errors.DocumentRejected: ``document-encrypted`` (needs a password
    or is encrypted at all: printers cannot be given the password),
    ``document-unreadable`` (pypdf cannot parse it, it has no pages, or its page
    tree is malformed: a page or node reached twice, too deep, too many entries),
    ``too-many-pages`` (more than ``max_pages``; counting stops there).
    """
    try:
        reader = pypdf.PdfReader(pdf, strict=False)
        encrypted = reader.is_encrypted
        sizes: list[tuple[int, int]] = []
        pages = 0 if encrypted else _count_leaves(reader, max_pages, sizes)
    except errors.DocumentRejected:
        raise
    except Exception as exc:  # pypdf raises many kinds on hostile input; all mean "broken"
        reason = f"{type(exc).__name__}: {exc}"[:_DETAIL_CHARS]
        raise errors.DocumentRejected(
            "document-unreadable", f"the PDF cannot be read ({reason}); nothing was stored"
        ) from None
    if encrypted:
        raise errors.DocumentRejected(
            "document-encrypted",
            "the PDF is encrypted; printers cannot open it — send it without encryption",
        )
    if pages == 0:
        raise errors.DocumentRejected("document-unreadable", "the PDF has no pages")
    return PdfFacts(pages, PageSizes.of(sizes), _title(reader))


def _title(reader: pypdf.PdfReader) -> str | None:
    """The PDF's /Title, if it is a text string with something visible in it. A broken or
    hostile information dictionary is no title, never a refusal: the pages are what print."""
    try:
        info = reader.metadata
        return None if info is None else clean_title(info.title)
    except Exception:  # pypdf raises many kinds on hostile input; all mean "no title"
        return None


def _box_size(node: DictionaryObject, inherited: tuple[int, int] | None) -> tuple[int, int] | None:
    """A page-tree node's visible size in hundredths of a millimetre (its own /CropBox or
    /MediaBox, else the inherited one); a box that is not four numbers is not a size."""
    for key in ("/CropBox", "/MediaBox"):
        box = _resolved(node.get(key))
        if isinstance(box, ArrayObject) and len(box) == 4:
            try:
                x0, y0, x1, y1 = (float(_resolved(v)) for v in box)  # type: ignore[arg-type]
                unit = float(_resolved(node.get("/UserUnit")) or 1.0)  # type: ignore[arg-type]
            except (TypeError, ValueError):
                continue
            w, h = abs(x1 - x0) * unit, abs(y1 - y0) * unit
            if 0 < w < 1e6 and 0 < h < 1e6:
                return round(w * _HMM_PER_POINT), round(h * _HMM_PER_POINT)
    return inherited


def _malformed(why: str) -> errors.DocumentRejected:
    return errors.DocumentRejected(
        "document-unreadable", f"the page tree is malformed ({why}); nothing was stored"
    )


def _resolved(value: PdfObject | None) -> PdfObject | None:
    return None if value is None else value.get_object()


def _identity(ref: PdfObject, obj: PdfObject) -> object:
    """What makes a page-tree entry the same entry: its object number, or (inline) itself."""
    if isinstance(ref, IndirectObject):
        return (ref.idnum, ref.generation)
    return id(obj)


def _count_leaves(reader: pypdf.PdfReader, max_pages: int, sizes: list[tuple[int, int]]) -> int:
    """Leaves of the page tree, walked as pypdf's own flattening does, with bounds.

    As in pypdf (``strict=False``), a node is ``/Type /Pages`` or, without a
    ``/Type``, has ``/Kids``; a leaf is ``/Type /Page`` or has neither; kids that
    are not dictionaries, or empty ones, are skipped (damaged files have them),
    entries of any other ``/Type`` are ignored. ``/Count`` is never trusted. Each leaf's
    size is appended to ``sizes`` (boxes are inherited down the tree).
    """
    root = reader.trailer["/Root"]
    if not isinstance(root, DictionaryObject):
        raise _malformed("the document catalog is not a dictionary")
    max_entries = 2 * max_pages + _SPARE_ENTRIES
    entries = leaves = 0
    seen: set[object] = set()
    # A frame per /Pages node on the path from the root: what is left of its /Kids,
    # and their depth. The root's frame holds only the catalog's /Pages entry.
    top = root.raw_get("/Pages") if "/Pages" in root else NullObject()
    stack: list[tuple[Iterator[PdfObject], int, tuple[int, int] | None]] = [(iter([top]), 0, None)]
    while stack:
        kids, depth, box = stack[-1]
        ref = next(kids, None)
        if ref is None:
            stack.pop()
            continue
        entries += 1
        if entries > max_entries:
            raise _malformed(f"more than {max_entries} entries")
        node = ref.get_object()
        if not isinstance(node, DictionaryObject) or not node:
            continue
        key = _identity(ref, node)
        if key in seen:
            raise _malformed("a page or node appears twice")
        seen.add(key)
        kind: object = _resolved(node.get("/Type"))
        if kind == "/Pages" or (kind is None and "/Kids" in node):
            if depth >= MAX_TREE_DEPTH:
                raise _malformed(f"nested more than {MAX_TREE_DEPTH} levels deep")
            node_kids = _resolved(node.get("/Kids"))
            if node_kids is None or isinstance(node_kids, NullObject):
                node_kids = ArrayObject()
            if not isinstance(node_kids, ArrayObject):
                raise _malformed("/Kids is not an array")
            stack.append((iter(node_kids), depth + 1, _box_size(node, box)))
        elif kind == "/Page" or kind is None:
            leaves += 1
            size = _box_size(node, box)
            if size is not None:
                sizes.append(size)
            if leaves > max_pages:
                raise errors.DocumentRejected(
                    "too-many-pages",
                    f"the PDF has more than {max_pages} pages; at most {max_pages} are "
                    "accepted (server.max_document_pages)",
                )
    return leaves
