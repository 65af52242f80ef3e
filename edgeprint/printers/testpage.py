"""A one-page test print (PDF) naming the printer: "Identify" for printers without
Identify-Printer, or when the technician wants paper."""

from __future__ import annotations

from datetime import UTC, datetime


def _text(value: str) -> str:
    ascii_only = value.encode("ascii", "replace").decode()
    return ascii_only.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def render_test_page(printer: str, by: str, now: float) -> bytes:
    """A valid one-page A6-ish PDF saying which printer this is, who asked and when."""
    stamp = datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    lines = ["edgeprint test page", f"printer: {printer}", f"asked by: {by}", stamp]
    ops = " ".join(f"({_text(line)}) Tj 0 -24 Td" for line in lines)
    stream = f"BT /F1 16 Tf 24 260 Td {ops} ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 297 420] "
        b"/Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
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
