"""Small PDFs for tests and benchmarks: valid ones (stdlib), and odd ones made with pypdf."""

from __future__ import annotations

import io
from typing import Any

import pypdf


def make_pdf(text: str = "edgeprint test badge", pad_to: int = 0, pages: int = 1) -> bytes:
    """A ``pages``-page 4x3 in PDF showing ``text`` (and the page number after the first);
    padded with a comment to ``pad_to`` bytes."""
    safe = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(pages)).encode()
    font = 3 + 2 * pages
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [" + kids + b"] /Count " + str(pages).encode() + b" >>",
    ]
    for i in range(pages):
        label = safe if i == 0 else f"{safe} {i + 1}"
        stream = f"BT /F1 18 Tf 20 100 Td ({label}) Tj ET".encode()
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 288 216] "
            b"/Resources << /Font << /F1 "
            + str(font).encode()
            + b" 0 R >> >> /Contents "
            + str(4 + 2 * i).encode()
            + b" 0 R >>"
        )
        objects.append(
            b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream"
        )
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    return raw_pdf(objects, pad_to=pad_to)


def raw_pdf(objects: list[bytes], pad_to: int = 0) -> bytes:
    """A PDF of the object bodies ``objects`` (object 1 is the catalog), with a correct xref.

    Written by hand so that tests can build page trees no PDF writer would make.
    """
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for i, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n".encode() + body + b"\nendobj\n"
    if pad_to > len(out):
        filler = pad_to - len(out) - 200
        while filler > 0:
            line = min(filler, 120)
            out += b"%" + b"x" * (line - 2) + b"\n"
            filler -= line
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for off in offsets:
        out += f"{off:010d} 00000 n \n".encode()
    out += (
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    )
    return bytes(out)


_CATALOG = b"<< /Type /Catalog /Pages 2 0 R >>"
_PAGE = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 72 72] >>"


def _refs(ids: Any) -> bytes:
    return b" ".join(b"%d 0 R" % i for i in ids)


def make_repeated_kids_pdf(kids: int = 100_000) -> bytes:
    """A page-tree bomb: one /Pages node listing the same page ``kids`` times (~6 bytes each).

    A reader that flattens the tree builds ``kids`` page objects before it can count them.
    """
    pages = b"<< /Type /Pages /Kids [" + b"3 0 R " * kids + b"] /Count %d >>" % kids
    return raw_pdf([_CATALOG, pages, _PAGE])


def make_page_tree_cycle_pdf() -> bytes:
    """A page tree whose second node lists the root as a kid: 2 → 4 → 2 → …"""
    return raw_pdf([
        _CATALOG,
        b"<< /Type /Pages /Kids [4 0 R] /Count 2 >>",
        _PAGE,
        b"<< /Type /Pages /Parent 2 0 R /Kids [3 0 R 2 0 R] /Count 2 >>",
    ])  # fmt: skip


def make_deep_page_tree_pdf(depth: int = 5000) -> bytes:
    """One page under ``depth`` nested /Pages nodes (objects 2, 4, 5, …; the page is 3)."""
    nodes = [2, *range(4, depth + 3)]  # depth nodes; the last one holds the page
    objects = {
        1: _CATALOG,
        3: b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 72 72] >>" % nodes[-1],
    }
    for node, kid in zip(nodes, [*nodes[1:], 3], strict=True):
        objects[node] = b"<< /Type /Pages /Kids [%d 0 R] /Count 1 >>" % kid
    return raw_pdf([objects[i] for i in range(1, len(objects) + 1)])


def make_lying_count_pdf(pages: int, count: int) -> bytes:
    """``pages`` distinct pages under a root /Pages node whose /Count says ``count``."""
    kids = range(3, pages + 3)
    page = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 72 72] >>"
    root = b"<< /Type /Pages /Kids [" + _refs(kids) + b"] /Count %d >>" % count
    return raw_pdf([_CATALOG, root, *(page for _ in kids)])


def _written(writer: Any) -> bytes:
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def make_pages_pdf(pages: int) -> bytes:
    """A PDF of ``pages`` blank 1x1 in pages (pypdf)."""
    writer = pypdf.PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(72, 72)
    return _written(writer)


def make_encrypted_pdf(password: str = "secret") -> bytes:
    """A one-page PDF encrypted with RC4-40 under ``password`` (an empty one still encrypts)."""
    writer = pypdf.PdfWriter()
    writer.add_blank_page(72, 72)
    writer.encrypt(password, algorithm="RC4-40")
    return _written(writer)


def make_drawn_pdf(
    pages: list[bytes], size_pt: tuple[float, float] = (288, 216), rotate: int = 0
) -> bytes:
    """A PDF whose page i draws the content stream ``pages[i]`` (Helvetica as /F1), one size."""
    n = len(pages)
    page_ids = [4 + 2 * i for i in range(n)]
    objects = [
        _CATALOG,
        b"<< /Type /Pages /Kids [" + _refs(page_ids) + b"] /Count %d >>" % n,
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    box = b"[0 0 %g %g]" % size_pt
    for i, stream in enumerate(pages):
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox " + box + b" /Rotate %d " % rotate
            + b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % (5 + 2 * i)
        )  # fmt: skip
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    return raw_pdf(objects)


def badge_content(name: str, *, color: bool = False, text: bool = True) -> bytes:
    """A badge's drawing: a frame, a bar (red when ``color``), a disc, rules, and the name.

    ``text=False`` leaves out the type: renderers substitute the non-embedded
    Helvetica with different fonts, so only shapes compare pixel for pixel.
    """
    safe = name.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    bar = b"0.8 0.1 0.1 rg" if color else b"0.3 g"
    shapes = (
        b"2 w 0 g 10 10 268 196 re S "
        + bar + b" 20 150 248 30 re f "
        + b"0 g 230 60 m 230 76.6 216.6 90 200 90 c 183.4 90 170 76.6 170 60 c "
        + b"170 43.4 183.4 30 200 30 c 216.6 30 230 43.4 230 60 c f "
        + b"0.5 w 20 40 m 150 40 l S 1 w 20 30 m 150 30 l S 0.6 g 24 90 120 28 re f "
    )  # fmt: skip
    if not text:
        return shapes
    return (
        shapes
        + b"0 g BT /F1 28 Tf 24 110 Td (" + safe.encode("latin-1") + b") Tj ET "
        + b"0.5 g BT /F1 12 Tf 24 60 Td (edgeprint 2026 - Hall B) Tj ET"
    )  # fmt: skip


def make_badge_pdf(name: str = "Ada Lovelace", *, color: bool = False, text: bool = True) -> bytes:
    """A one-page 4x3 in badge (see :func:`badge_content`)."""
    return make_drawn_pdf([badge_content(name, color=color, text=text)])


def make_a4_pdf(pages: int, size_pt: tuple[float, float] = (595, 842)) -> bytes:
    """``pages`` A4 (or ``size_pt``) pages of text and rules: a handout, to a renderer."""
    streams = []
    for p in range(pages):
        lines = b" ".join(
            b"BT /F1 11 Tf 56 %d Td (Page %d line %d: the quick brown fox jumps over the lazy dog) Tj ET"
            % (780 - 14 * i, p + 1, i + 1)
            for i in range(50)
        )
        streams.append(b"1 w 0 g 40 40 515 762 re S " + lines)
    return make_drawn_pdf(streams, size_pt=size_pt)
