"""A one-page test print (PDF) naming the printer: "Identify" for printers without
Identify-Printer, or when the technician wants paper."""

from __future__ import annotations

from datetime import UTC, datetime


def _text(value: str) -> str:
    ascii_only = value.encode("ascii", "replace").decode()
    return ascii_only.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def render_test_page(
    printer: str,
    by: str,
    now: float,
    size_pt: tuple[int, int] = (297, 420),
    title: str = "edgeprint test page",
) -> bytes:
    """A valid one-page PDF (A6-ish, or ``size_pt`` points) saying which printer this is,
    who asked and when."""
    stamp = datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    lines = [title, f"printer: {printer}", f"asked by: {by}", stamp]
    width, height = size_pt
    font = 16 if height >= 200 else 10
    ops = " ".join(f"({_text(line)}) Tj 0 -{font + 4} Td" for line in lines)
    stream = f"BT /F1 {font} Tf 12 {height - font - 12} Td {ops} ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {width} {height}] ".encode()
        + b"/Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
        b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for off in offsets:
        out += f"{off:010d} 00000 n \n".encode()
    out += (
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    )
    return bytes(out)
