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
