"""The rows of ``bench.report``'s table, one function per benchmark's result file (by name
in :data:`ROWS`), and the number formats they share (``num``: what the README's rounding is).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Row:
    """One line of the table: edgeprint's figure, what it is compared with, the ratio."""

    section: str
    figure: str
    edgeprint: str
    other: str = ""
    ratio: str = ""
    #: ``<benchmark>:<n>``, set by :func:`join`: which result file the row comes from.
    key: str = ""


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
        lat = {
            w: f"{side(w, f'{op}.p50_ms', 'ms')} / {side(w, f'{op}.p99_ms', 'ms')}"
            for w in ("edgeprint", "baseline")
        }
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
    if dig(d, "summary.edgeprint-tls"):
        rows += _tls(d)
    return rows


def _tls(d: Mapping[str, Any]) -> list[Row]:
    """The same run's edgeprint over TLS beside edgeprint over plain HTTP (issue 26)."""

    def side(who: str, path: str, unit: str) -> str:
        return spread(dig(d, f"summary.{who}.{path}"), unit)

    rows = []
    for op, unit in (("submit", "µs"), ("release", "µs")):
        for path, what, u in (
            ("rate_per_s", "throughput", "/s"),
            ("server_cpu_us_per_req", "server CPU per request", unit),
        ):
            rows.append(
                Row(
                    "API over TLS",
                    f"{op}, 50 kept-alive connections: {what}",
                    side("edgeprint-tls", f"{op}.{path}", u),
                    "plain HTTP: " + side("edgeprint", f"{op}.{path}", u),
                    ratio(dig(d, f"summary.ratio_tls_over_plain.{op}.{path}")),
                )
            )
    rows.append(
        Row(
            "API over TLS",
            "1,000 clients releasing one job at once, each a new connection: burst time",
            side("edgeprint-tls", "contention.wall_ms", "ms"),
            "plain HTTP: " + side("edgeprint", "contention.wall_ms", "ms"),
            ratio(dig(d, "summary.ratio_tls_over_plain.contention.wall_ms")),
        )
    )
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


def _adversary(section: str) -> Callable[[Mapping[str, Any]], list[Row]]:
    """Rows of a ``bench.adversary_bench`` result (``section`` says which run)."""

    def rows(d: Mapping[str, Any]) -> list[Row]:
        sm = d["summary"]
        v = sm["violations"]
        stopped = sm.get("sent_while_stopped")
        extra = "" if stopped is None else f"; {stopped} jobs sent to a stopped printer"
        return [
            Row(
                section,
                f"{sm['seeds']} seeds of generated printers ({sm['behaviours']} behaviours, "
                f"{int(sm['pairs']):,} pairs; {int(sm['appliance_kills']):,} appliance kills, "
                f"{sm['printer_restarts']} printer restarts)",
                ", ".join(f"{i} {v[i]}" for i in ("I1", "I2", "I3", "I4", "I5", "I6")) + extra,
                f"DONE {int(sm['done']):,} ({sm['printed_unverified']} printed_unverified, "
                f"{sm.get('hidden_by_printer', '–')} of them hidden by the printer), "
                f"DEAD {sm['dead']}, undecidable {sm['undecidable']}, peak "
                f"{sm['peak_requests_per_s']} requests/s",
            ),
        ]

    return rows


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


ROWS: dict[str, Callable[[Mapping[str, Any]], list[Row]]] = {
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
    "adversary": _adversary("printer adversary"),
    "adversary_issue23": _adversary("printer adversary, issue 23's behaviours added"),
    "adversary_issue25": _adversary("printer adversary, seeds drawing issue 25's behaviours"),
    "morning": _generic("opening morning"),
    "powercut": _generic("power cuts"),
    "dist": _dist,
    "print_versus": _generic("printing, this tree beside an older commit"),
    "restart": _generic("restart, this tree beside an older commit"),
}
