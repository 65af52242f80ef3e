"""Text for a technician's terminal: fixed-width tables, folding at 80 columns, ages,
the printer and pool tables; nothing from the network reaches the terminal unescaped.
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

from edgeprint import printable

WIDTH = 80


def emit_raw(body: bytes) -> None:
    """The API's answer as it came (``--json``), ending with a newline."""
    text = body.decode("utf-8", "replace")
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def out(lines: Sequence[str]) -> None:
    """``lines`` on stdout, cleaned of control characters, without trailing blanks."""
    sys.stdout.write("".join(clean(line).rstrip() + "\n" for line in lines))


def health(p: dict[str, Any]) -> str:
    if p.get("printer_state") is None and not p.get("reachable"):
        return "unknown" if not p.get("last_error") else "DOWN"
    if not p.get("reachable"):
        return "DOWN"
    return "ok" if p.get("healthy") else "UNHEALTHY"


def reasons(p: dict[str, Any]) -> list[str]:
    return [r for r in p.get("printer_state_reasons") or [] if r != "none"]


def problems(p: dict[str, Any]) -> list[dict[str, Any]]:
    """The printer's problems as the API words them: current ones first, then the "was: …"
    ones (issue 25; an older appliance sends none)."""
    listed = p.get("problems")
    return [x for x in listed if isinstance(x, dict)] if isinstance(listed, list) else []


def has_problem(p: dict[str, Any]) -> bool:
    """A current problem (an older appliance: not healthy, or not answering)."""
    if "problems" in p:
        return any(x.get("until") is None for x in problems(p))
    return health(p) not in ("ok", "unknown")


def by_problem(printers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Printers with a current problem first, then by name (as GET /v1/printers lists them)."""
    return sorted(printers, key=lambda p: (not has_problem(p), str(p.get("name", ""))))


def printer_table(printers: list[dict[str, Any]], *, short_ids: bool) -> list[str]:
    if not printers:
        return ["no printers configured"]
    printers = by_problem(printers)
    rows = [
        [
            p["name"],
            p.get("pool") or "-",
            health(p),
            p.get("printer_state") or "-",
            num(p.get("queued_job_count")),
            str(p.get("waiting", 0)),
            age(p.get("oldest_waiting_s")),
            "PAUSED" if p.get("paused") else "no",
            short_id(p.get("printing_job"), short_ids),
        ]
        for p in printers
    ]
    headers = [
        "PRINTER",
        "POOL",
        "HEALTH",
        "STATE",
        "QUEUED",
        "WAIT",
        "OLDEST",
        "PAUSED",
        "PRINTING",
    ]
    lines = table(headers, rows, right={4, 5, 6})
    for p in printers:
        for problem in problems(p):  # one sentence each: what, since when, what to do
            lines += wrap(f"{p['name']}: {problem.get('text', '')}")
        notes = []
        old = "problems" not in p  # an appliance before issue 25: its raw words
        if old and p.get("health_reason") and health(p) != "ok":
            notes.append(f"why: {p['health_reason']}")
        if reasons(p):
            notes.append("reasons: " + ", ".join(reasons(p)))
        if old and p.get("last_error") and health(p) != "ok":
            notes.append(f"last error: {p['last_error']}")
        stock = sorted({m.get("size", "") for m in p.get("media_ready") or []})
        if stock:
            notes.append("stock: " + ", ".join(stock))
        runway = p.get("runway")  # issue 23: the label roll's count
        if runway:
            left = f"labels: {runway['labels_left']} of {runway['labels_per_roll']} left"
            if runway.get("minutes_left") is not None:
                left += f", about {runway['minutes_left']:.0f} min at {runway['per_minute']}/min"
            notes.append(left)
        if notes:
            lines += wrap(f"{p['name']}: " + "; ".join(notes))
    return lines


def stock_waits(waits: list[dict[str, Any]]) -> list[str]:
    """``waiting_for_stock`` of GET /v1/printers: what to load where (nothing when none)."""
    lines: list[str] = []
    for w in waits:
        lines += wrap(
            f"WAITING FOR STOCK  {w.get('jobs', 0)} job(s): {w.get('reason', '')}", "", "    "
        )
    return lines


def pool_table(pools: list[dict[str, Any]]) -> list[str]:
    if not pools:
        return ["no pools configured"]
    rows = [
        [
            p["name"],
            " ".join(p.get("printers", [])),
            str(p.get("waiting", 0)),
            age(p.get("oldest_waiting_s")),
        ]
        for p in pools
    ]
    return table(["POOL", "PRINTERS", "WAIT", "OLDEST"], rows, right={2, 3})


def table(
    headers: list[str], rows: list[list[str]], right: Collection[int] = frozenset()
) -> list[str]:
    """Fixed columns as wide as their widest cell; two spaces apart, one if that fits 80."""
    cells = [[clean(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    sep = "  " if sum(widths) + 2 * (len(widths) - 1) <= WIDTH else " "

    def fmt(row: list[str]) -> str:
        padded = (
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        )
        return sep.join(padded).rstrip()

    return [fmt(headers), *(fmt(r) for r in cells)]


def wrap(text: str, indent: str = "  ", subsequent: str = "    ") -> list[str]:
    """``text`` folded to 80 columns (never at a hyphen: printer names and reasons have them)."""
    return textwrap.wrap(
        clean(text),
        WIDTH,
        initial_indent=indent,
        subsequent_indent=subsequent,
        break_on_hyphens=False,
    ) or [indent.rstrip()]


def clean(text: str) -> str:
    """No terminal control sequences from data (a printer's message, an owner)."""
    return printable.clean(text)


def trim(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "~"


def short_id(job_id: str | None, short: bool) -> str:
    if not job_id:
        return "-"
    return job_id[:8] if short else job_id


def num(value: int | None) -> str:
    return "-" if value is None else str(value)


def yes(value: object) -> str:
    return "yes" if value else "no"


def age(seconds: float | None) -> str:
    """``7s``, ``4m05s``, ``2h10m``, ``3d04h``; ``-`` for none."""
    if seconds is None:
        return "-"
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def ago(iso: str | None, now: datetime) -> str:
    if not iso:
        return "-"
    try:
        then = datetime.fromisoformat(iso)
    except ValueError:
        return "-"
    return age((now - then).total_seconds())
