"""Join the result files of one ``make bench`` run into one table.

Reads ``bench/results/<name>.json`` for :data:`BENCHMARKS`, prints a Markdown table and
writes ``bench/results/latest.{json,md}``. Exit 1 when a file is missing or older than
``--max-age-s`` (its benchmark did not run), or a benchmark reported duplicates or losses.

    .venv/bin/python -m bench.report
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
BENCHMARKS = (
    "api", "print", "failover", "cups", "chaos", "resources", "render", "fleet",
    "soak", "ipp", "pg", "adversary", "morning", "powercut", "dist",
)  # fmt: skip


@dataclass(frozen=True)
class Row:
    """One line of the table: edgeprint's figure, what it is compared with, the ratio."""

    section: str
    figure: str
    edgeprint: str
    other: str = ""
    ratio: str = ""


def num(v: Any, unit: str = "") -> str:
    """A number for people: 1,234 / 12.3 / 1.23, with ``unit`` appended."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if not isinstance(v, int | float):
        return f"{v} {unit}".rstrip()
    if isinstance(v, float) and v.is_integer() and abs(v) >= 10:
        v = int(v)
    a = abs(v)
    if a >= 100:
        s = f"{v:,.0f}"
    elif a >= 10:
        s = f"{v:.1f}"
    else:
        s = f"{v:.2f}".rstrip("0").rstrip(".") if isinstance(v, float) else str(v)
    return f"{s} {unit}".rstrip() if unit else s


def spread(f: Any, unit: str = "") -> str:
    """``median (min–max) unit`` for a {median, min, max} dict, or a plain value."""
    if isinstance(f, Mapping) and "median" in f:
        med, lo, hi = f["median"], f.get("min"), f.get("max")
        if lo is None or hi is None or lo == hi:
            return num(med, unit)
        return f"{num(med)} ({num(lo)}–{num(hi)}) {unit}".rstrip()
    return num(f, unit)


def ratio(f: Any) -> str:
    if isinstance(f, Mapping):
        f = f.get("median")
    if not isinstance(f, int | float):
        return ""
    return f"{f:.3g}×"


def dig(d: Mapping[str, Any], path: str) -> Any:
    """``d["a"]["b"]`` for path ``"a.b"``; None when any part is missing."""
    cur: Any = d
    for part in path.split("."):
        if not isinstance(cur, Mapping) or part not in cur:
            return None
        cur = cur[part]
    return cur


def _api(d: Mapping[str, Any]) -> list[Row]:
    def side(who: str, path: str, unit: str) -> str:
        return spread(dig(d, f"summary.{who}.{path}"), unit)

    def cells(path: str, unit: str, other: str = "bare: ") -> tuple[str, str, str]:
        edge, bare = side("edgeprint", path, unit), side("baseline", path, unit)
        return edge, other + bare, ratio(dig(d, f"summary.ratio_edgeprint_over_baseline.{path}"))

    rows = []
    for op, what in (
        ("submit", "submit 30 KiB PDF, 50 connections"),
        ("release", "release, 50 connections"),
    ):
        same = "bare aiohttp + aiosqlite, same durable write: "
        rows.append(Row("API", f"{what}: throughput", *cells(f"{op}.rate_per_s", "/s", same)))
        lat = {w: f"{side(w, f'{op}.p50_ms', 'ms')} / {side(w, f'{op}.p99_ms', 'ms')}"
               for w in ("edgeprint", "baseline")}  # fmt: skip
        p99 = ratio(dig(d, f"summary.ratio_edgeprint_over_baseline.{op}.p99_ms"))
        figure = f"{what}: p50 / p99 latency (ratio of p99)"
        rows.append(Row("API", figure, lat["edgeprint"], f"bare: {lat['baseline']}", p99))
    cpu = cells("release.server_cpu_us_per_req", "µs")
    rows.append(Row("API", "release: server CPU per request", *cpu))
    prof = dig(d, "release_profile.profile")
    if prof:
        top = ", ".join(f"{x['function'].split(' (')[0]} {x['pct']:.0f} %" for x in prof["own"][:4])
        rows.append(Row("API", f"release under py-spy: top own CPU ({prof['file']})", top))
    statuses = dig(d, "summary.edgeprint.contention.statuses") or []
    outcome = "; ".join(
        sorted({" + ".join(f"{n}×{s}" for s, n in sorted(x.items())) for x in statuses})
    )
    edge, bare, r = cells("contention.wall_ms", "ms")
    figure = "1,000 concurrent releases of one job: burst time"
    rows.append(Row("API", figure, f"{edge} ({outcome})", bare, r))
    return rows


def _print(d: Mapping[str, Any]) -> list[Row]:
    s = "summary"
    return [
        Row(
            "printing",
            "release → printed on an idle printer: p50 / p99",
            f"{spread(dig(d, f'{s}.latency.release_to_printed_p50_ms'), 'ms')} / "
            f"{spread(dig(d, f'{s}.latency.release_to_printed_p99_ms'), 'ms')}",
        ),
        Row(
            "printing",
            "drain, one printer, print engine taking no time",
            f"{spread(dig(d, f'{s}.drain1.jobs_per_s_per_printer'), 'jobs/s')}; idle gap p50 "
            f"{spread(dig(d, f'{s}.drain1.idle_gap_p50_ms'), 'ms')}",
        ),
        Row(
            "printing",
            "drain, pool of two printers",
            spread(dig(d, f"{s}.drain2.jobs_per_s_per_printer"), "jobs/s per printer"),
        ),
        Row(
            "printing",
            "appliance SIGKILLed with 16 jobs open: restart → all PRINTING reconciled",
            f"{spread(dig(d, f'{s}.recovery.restart_to_reconciled_ms'), 'ms')} (/readyz "
            f"{spread(dig(d, f'{s}.recovery.restart_to_readyz_ms'), 'ms')}); duplicates "
            f"{spread(dig(d, f'{s}.recovery.duplicates'))}, losses "
            f"{spread(dig(d, f'{s}.recovery.losses'))}",
        ),
        *_generic("printing, no PDF")(d),
    ]


def _failover(d: Mapping[str, Any]) -> list[Row]:
    s = "summary.defaults"
    chaos = d.get("chaos") or {}
    rows = [
        Row(
            "failover",
            "printer SIGKILLed under load → reported unhealthy / its first job on a peer",
            f"{spread(dig(d, f'{s}.kill_to_unhealthy_log_ms'), 'ms')} / "
            f"{spread(dig(d, f'{s}.kill_to_first_on_peer_ms'), 'ms')}",
        ),
    ]
    if chaos:
        rows.append(
            Row(
                "failover",
                f"printer chaos: {chaos.get('jobs_accepted')} jobs, "
                f"{chaos.get('kills')} printer kills + {chaos.get('hangs')} hangs",
                f"{chaos.get('duplicates')} duplicates, {chaos.get('losses')} losses; "
                f"{chaos.get('done')} DONE, {chaos.get('dead')} DEAD outcome_unknown",
            )
        )
    return rows


def _generic(section: str) -> Callable[[Mapping[str, Any]], list[Row]]:
    """Rows from a benchmark that writes its own ``table`` (cups, chaos, resources)."""

    def rows(d: Mapping[str, Any]) -> list[Row]:
        out = []
        for t in d.get("table", []):
            unit = t.get("unit", "")
            if "edgeprint" in t:  # side by side
                skip = (
                    "figure",
                    "unit",
                    "edgeprint",
                    "ratio",
                    "note",
                    "section",
                    "key",
                    "cups_config",
                )
                note = f" ({t['note']})" if t.get("note") else ""
                other_name = next((k for k in t if k not in skip), "")
                other = f"{other_name}: {spread(t[other_name], unit)}" if other_name else ""
                figure = f"{t['section']}: {t['figure']}" if t.get("section") else t["figure"]
                value = spread(t["edgeprint"], unit) + note
                out.append(Row(section, figure, value, other, ratio(t.get("ratio"))))
            else:
                value = spread({k: t.get(k) for k in ("median", "min", "max")}, unit)
                note = t.get("note", "")
                out.append(Row(section, t["figure"], value + (f" ({note})" if note else "")))
        return out

    return rows


def _ipp(d: Mapping[str, Any]) -> list[Row]:
    st, sm, p50 = d["settings"], d["summary"], d["release_to_printed_p50_ms"]
    return [
        Row(
            "IPP queues",
            f"Print-Job of {st['doc_kib']} KiB at {st['concurrency']} clients (durable)",
            num(sm["ipp"]["rate_per_s"], "/s"),
            "POST /v1/jobs: " + num(sm["json"]["rate_per_s"], "/s"),
            ratio(d["ratio"]),
        ),
        Row(
            "IPP queues",
            f"held over IPP, released over the API → printed, p50 ({st['held']} each)",
            num(p50["ipp"], "ms"),
            "held over JSON: " + num(p50["json"], "ms"),
            ratio(d["release_to_printed_ratio"]),
        ),
    ]


def _adversary(d: Mapping[str, Any]) -> list[Row]:
    sm = d["summary"]
    v = sm["violations"]
    return [
        Row(
            "printer adversary",
            f"{sm['seeds']} seeds of generated printers ({sm['behaviours']} behaviours, "
            f"{sm['pairs']} pairs; {sm['appliance_kills']} appliance kills, "
            f"{sm['printer_restarts']} printer restarts)",
            ", ".join(f"{i} {v[i]}" for i in ("I1", "I2", "I3", "I4", "I5", "I6")),
            f"DONE {sm['done']} ({sm['printed_unverified']} printed_unverified), "
            f"DEAD {sm['dead']}, undecidable {sm['undecidable']}, peak "
            f"{sm['peak_requests_per_s']} requests/s",
        ),
    ]


def _dist(d: Mapping[str, Any]) -> list[Row]:
    return [
        Row(
            "resources",
            "dist/edgeprint single file: size; spawn → /readyz",
            f"{d['bytes'] / 2**20:.1f} MiB; {spread(d['built_ready_ms'], 'ms')}",
            "package (python -m edgeprint): " + spread(d["package_ready_ms"], "ms"),
            f"{d['built_ready_ms']['median'] / d['package_ready_ms']['median']:.2f}×",
        ),
    ]


_ROWS: dict[str, Callable[[Mapping[str, Any]], list[Row]]] = {
    "api": _api,
    "print": _print,
    "failover": _failover,
    "cups": _generic("CUPS side by side"),
    "chaos": _generic("chaos"),
    "resources": _generic("resources"),
    "render": _generic("rendering"),
    "fleet": _generic("many printers"),
    "soak": _generic("soak"),
    "ipp": _ipp,
    "pg": _generic("PostgreSQL, two boxes"),
    "adversary": _adversary,
    "morning": _generic("opening morning"),
    "powercut": _generic("power cuts"),
    "dist": _dist,
}


def _bad_counts(name: str, d: Mapping[str, Any]) -> list[str]:
    """Duplicates or losses a benchmark reported anywhere in its summary/table."""
    found: list[str] = []

    def walk(x: Any, path: str) -> None:
        if isinstance(x, Mapping):
            for k, v in x.items():
                key = str(k)
                if key in ("duplicates", "losses") and isinstance(v, int | float) and v:
                    found.append(f"{name}: {path}.{key} = {v}")
                elif key in ("duplicates", "losses") and isinstance(v, Mapping):
                    if v.get("max"):
                        found.append(f"{name}: {path}.{key} max = {v['max']}")
                else:
                    walk(v, f"{path}.{key}")

    walk({k: v for k, v in d.items() if k in ("summary", "chaos", "totals", "across", "takeover")},
         name)  # fmt: skip
    return found


def table(rows: list[Row]) -> str:
    out = [
        "| | figure | edgeprint, median (min–max) | side by side, same run | ratio |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        cells = [r.section, r.figure, r.edgeprint, r.other, r.ratio]
        out.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-age-s", type=float, default=3600.0)
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    rows: list[Row] = []
    problems: list[str] = []
    summaries: dict[str, Any] = {}
    machine: dict[str, Any] = {}
    now = time.time()
    for name in BENCHMARKS:
        path = args.results / f"{name}.json"
        if not path.exists():
            problems.append(f"{name}: {path} missing (did bench.{name}_bench run?)")
            continue
        if now - path.stat().st_mtime > args.max_age_s:
            problems.append(f"{name}: {path} is older than {args.max_age_s:.0f} s (stale)")
        d = json.loads(path.read_text())
        rows += _ROWS[name](d)
        problems += _bad_counts(name, d)
        summaries[name] = {k: d[k] for k in ("summary", "table", "chaos", "settings") if k in d}
        if "platform" not in machine and isinstance(d.get("machine"), Mapping):
            machine = dict(d["machine"])
    md = table(rows)
    generated = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    header = (
        f"`make bench`, {generated}; {machine.get('nproc', '?')} cores, "
        f"{machine.get('platform', '')}, Python {machine.get('python', '?')}, "
        f"SQLite {machine.get('sqlite', '?')}"
    )
    (args.results / "latest.md").write_text(f"{header}\n\n{md}\n")
    (args.results / "latest.json").write_text(
        json.dumps(
            {
                "generated_at": generated,
                "command": "make bench",
                "machine": machine,
                "rows": [r.__dict__ for r in rows],
                "problems": problems,
                "benchmarks": summaries,
            },
            indent=1,
            default=str,
        )
    )
    print(header + "\n\n" + md)
    for p in problems:
        print(f"PROBLEM: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
