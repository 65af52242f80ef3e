"""Small PDFs for tests and benchmarks: valid ones (stdlib), and odd ones made with pypdf."""

from __future__ import annotations

import io
from typing import Any

import pypdf


def make_pdf(text: str = "edgeprint test badge", pad_to: int = 0) -> bytes:
    """A one-page 4x3 in PDF showing ``text``; padded with a comment to ``pad_to`` bytes."""
    safe = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    stream = f"BT /F1 18 Tf 20 100 Td ({safe}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 288 216] "
        b"/Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
        b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
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
