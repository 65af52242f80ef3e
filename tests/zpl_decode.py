"""Decode the graphic LPrint downloads to a Zebra (``~DG``, ZPL ASCII hex with ZPL compression).

For tests only: what a real Zebra would have printed, as a bitmap (True = dot).
ZPL II compression: ``G``..``Y`` repeat the next hex digit 1..19 times,
``g``..``z`` 20..400 times (counts add up), ``,`` fills the rest of the row
with 0, ``!`` with 1, ``:`` repeats the previous row.
"""

from __future__ import annotations

import re

import numpy as np
import numpy.typing as npt

_DG = re.compile(rb"~DG([^,]+),(\d+),(\d+),")


def _count(ch: int) -> int:
    if ord("G") <= ch <= ord("Y"):
        return ch - ord("G") + 1
    if ord("g") <= ch <= ord("z"):
        return (ch - ord("g") + 1) * 20
    return 0


def graphics(zpl: bytes) -> dict[str, npt.NDArray[np.bool_]]:
    """Every ``~DG`` graphic in ``zpl`` by name, as (rows, bytes_per_row * 8) bitmaps."""
    out = {}
    for m in _DG.finditer(zpl):
        name, total, per_row = m.group(1).decode(), int(m.group(2)), int(m.group(3))
        width = per_row * 2  # hex digits per row
        rows: list[str] = []
        row: list[str] = []
        repeat = 0
        i = m.end()
        while len(rows) * per_row < total and i < len(zpl):
            ch = zpl[i]
            i += 1
            if ch in b" \r\n":
                continue
            if ch == ord("^") or ch == ord("~"):
                break
            if n := _count(ch):
                repeat += n
                continue
            c = chr(ch)
            if c in "0123456789ABCDEFabcdef":
                row.extend(c.upper() * max(1, repeat))
                repeat = 0
            elif c == ",":
                row.extend("0" * (width - len(row)))
            elif c == "!":
                row.extend("F" * (width - len(row)))
            elif c == ":":
                row = list(rows[-1]) if rows else ["0"] * width
            else:
                raise ValueError(f"unexpected {c!r} in ~DG data")
            if len(row) > width:
                raise ValueError(f"row {len(rows)} longer than {width} hex digits")
            if len(row) == width:
                rows.append("".join(row))
                row = []
        if len(rows) * per_row != total:
            raise ValueError(f"{name}: {len(rows)} rows of {per_row} bytes, header says {total}")
        data = np.frombuffer(bytes.fromhex("".join(rows)), dtype=np.uint8)
        out[name] = np.unpackbits(data.reshape(len(rows), per_row), axis=1).astype(bool)
    return out
