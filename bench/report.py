"""Join the result files of one ``make bench`` run into one table.

Reads ``bench/results/<name>.json`` for :data:`BENCHMARKS` (and :data:`OPTIONAL` when
present), prints a Markdown table and writes ``bench/results/latest.{json,md}``. Exit 1 when
a file is missing or its run (the date it recorded) is older than ``--max-age-s`` (its
benchmark did not run), or a benchmark reported duplicates or losses. ``--readme`` rewrites
the README's Performance table from ``latest.json`` (tests/test_readme_figures.py checks
that the two agree).

    .venv/bin/python -m bench.report [--max-age-s S] && .venv/bin/python -m bench.report --readme
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import re
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
#: Every benchmark ``make bench`` runs, by the name of its result file.
BENCHMARKS = (
    "api",
    "print",
    "failover",
    "cups",
    "chaos",
    "resources",
    "render",
    "fleet",
    "soak",
    "ipp",
    "pg",
    "adversary",
    "morning",
    "powercut",
    "dist",
)
#: Result files joined when present, whatever their age: runs ``make bench`` does not make
#: (``bench.print_bench --versus <commit>``, adversary runs of chosen seeds kept by name).
OPTIONAL = ("print_versus", "adversary_issue23", "adversary_issue25")
README = REPO / "README.md"
#: The README's Performance table lies between these lines; ``--readme`` rewrites it.
BEGIN = "<!-- bench.report: generated from bench/results/latest.json; do not edit -->"
END = "<!-- bench.report: end -->"


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
    "adversary": _adversary("printer adversary"),
    "adversary_issue23": _adversary("printer adversary, issue 23's behaviours added"),
    "adversary_issue25": _adversary("printer adversary, seeds drawing issue 25's behaviours"),
    "morning": _generic("opening morning"),
    "powercut": _generic("power cuts"),
    "dist": _dist,
    "print_versus": _generic("printing, this tree beside an older commit"),
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

    kept = ("summary", "chaos", "totals", "across", "takeover")
    walk({k: v for k, v in d.items() if k in kept}, name)
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


def run_date(d: Mapping[str, Any]) -> str:
    """When a result file's benchmark ran, as it recorded it ("" when it did not)."""
    m = d.get("machine")
    return str((m.get("date") if isinstance(m, Mapping) else None) or d.get("date") or "")


def _age_s(path: Path, d: Mapping[str, Any], now: float) -> float:
    """Seconds since the benchmark ran: its recorded date, else the file's mtime (a fresh
    checkout makes every file new, so the date is the truth when there is one)."""
    when = run_date(d)
    try:
        return now - dt.datetime.fromisoformat(when).timestamp()
    except ValueError:
        return now - path.stat().st_mtime


def runs_table(benchmarks: Mapping[str, Any]) -> str:
    """One line per joined result file: when it ran, the machine's load, the command."""
    out = ["| benchmark | ran | load average (start → end) | command |", "|---|---|---|---|"]
    for name, b in benchmarks.items():
        load = b.get("loadavg") or ""
        out.append(f"| {name} | {b.get('date', '')[:16]} | {load} | `{b.get('command', '')}` |")
    return "\n".join(out)


def _load(d: Mapping[str, Any]) -> str:
    m = d.get("machine")
    if not isinstance(m, Mapping):
        return ""
    start, end = m.get("loadavg_start") or m.get("loadavg"), m.get("loadavg_end")
    one = [f"{x[0]:.1f}" for x in (start, end) if isinstance(x, list | tuple) and x]
    return " → ".join(one)


def join(results: Path, max_age_s: float) -> dict[str, Any]:
    """Every result file's rows and summary, and the problems found (missing, stale, bad)."""
    rows: list[Row] = []
    problems: list[str] = []
    summaries: dict[str, Any] = {}
    machine: dict[str, Any] = {}
    now = time.time()
    for name in (*BENCHMARKS, *OPTIONAL):
        path = results / f"{name}.json"
        if not path.exists():
            if name not in OPTIONAL:
                problems.append(f"{name}: {path} missing (did bench.{name}_bench run?)")
            continue
        d = json.loads(path.read_text())
        if name not in OPTIONAL and _age_s(path, d, now) > max_age_s:
            problems.append(f"{name}: {path} is older than {max_age_s:.0f} s (stale)")
        mine = _ROWS[name](d)
        rows += [replace(r, key=f"{name}:{i}") for i, r in enumerate(mine)]
        problems += _bad_counts(name, d)
        summaries[name] = {k: d[k] for k in ("summary", "table", "chaos", "settings") if k in d}
        summaries[name].update(date=run_date(d), loadavg=_load(d), command=d.get("command", ""))
        if "platform" not in machine and isinstance(d.get("machine"), Mapping):
            machine = dict(d["machine"])
    return {
        "generated_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "command": "make bench",
        "machine": machine,
        "rows": [r.__dict__ for r in rows],
        "problems": problems,
        "benchmarks": summaries,
    }


def markdown(latest: Mapping[str, Any]) -> str:
    """``latest.md``: the machine, the table of every row, and when each benchmark ran."""
    m = latest["machine"]
    header = (
        f"`make bench`, joined {latest['generated_at']}; {m.get('nproc', '?')} cores, "
        f"{m.get('platform', '')}, Python {m.get('python', '?')}, SQLite {m.get('sqlite', '?')}"
    )
    rows = [Row(**r) for r in latest["rows"]]
    return f"{header}\n\n{table(rows)}\n\n{runs_table(latest['benchmarks'])}\n"


def readme_section(readme: str, latest: Mapping[str, Any]) -> str:
    """``readme`` with the text between :data:`BEGIN` and :data:`END` rendered from
    ``latest``. Raises ValueError when the markers are missing."""
    start, end = readme.find(BEGIN), readme.find(END)
    if start < 0 or end < start or "\n## Performance\n" not in readme[:start]:
        raise ValueError(f"the README has no {BEGIN!r} … {END!r} block")
    return readme[: start + len(BEGIN)] + "\n" + markdown(latest) + readme[end:]


#: A figure with its unit, as prose quotes one: ``13.4 ms``, ``0.306×``, ``5.5 MiB``,
#: ``2,223 releases/s``.
FIGURE = re.compile(r"(?<![\w.,])(\d[\d,]*(?:\.\d+)?)\s?(×|ms|µs|MiB|KiB|%|/s| \w+/s| s\b)")


def _performance(readme: str) -> str:
    """The README's Performance section, up to the next ``## `` heading."""
    start = readme.index("\n## Performance\n")
    end = readme.find("\n## ", start + 1)
    return readme[start : end if end > 0 else len(readme)]


def _written_by_benches() -> set[str]:
    """The result files bench/*_bench.py write, by name (``parser("x", …)`` → x.json)."""
    names: set[str] = set()
    for path in (REPO / "bench").glob("*_bench.py"):
        text = path.read_text()
        names |= set(re.findall(r'parser\("(\w+)"', text))
        names |= set(re.findall(r'RESULTS / "(\w+)\.json"', text))
    return names - {"startup"}  # bench.startup_bench writes dist.json


def check(results: Path, readme: str) -> list[str]:
    """Why ``readme``'s Performance figures are not latest.json's (empty: they agree):
    latest.json's rows are not what the result files give, a benchmark's file is not
    joined, the table between the markers is not rendered from latest.json, or the prose
    around it quotes a figure (with its unit) the table does not show."""
    latest = json.loads((results / "latest.json").read_text())
    out: list[str] = []
    if join(results, float("inf"))["rows"] != latest["rows"]:
        out.append("latest.json's rows are not the result files': run `python -m bench.report`")
    unjoined = _written_by_benches() - set(BENCHMARKS) - set(OPTIONAL)
    out += [f"bench writes {n}.json, which the report does not join" for n in sorted(unjoined)]
    try:
        section = _performance(readme)
        rendered = readme_section(readme, latest)
    except ValueError as exc:
        return [*out, f"README: {exc}"]
    if rendered != readme:
        out.append("README's table is not latest.json's: run `python -m bench.report --readme`")
    table = section[section.index(BEGIN) : section.index(END)]
    prose = section.replace(table, "")
    for m in FIGURE.finditer(prose):
        if not re.search(rf"(?<![\d.,]){re.escape(m.group(1))}(?![\d,])", table):
            out.append(f"README prose quotes {m.group(0).strip()!r}, which the table does not show")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-age-s", type=float, default=3600.0)
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument(
        "--readme",
        action="store_true",
        help="only rewrite the README's Performance table from the results' latest.json",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="only check that the README's Performance figures are latest.json's (exit 1: not)",
    )
    parser.add_argument("--readme-file", type=Path, default=README)
    args = parser.parse_args(argv)
    if args.readme:
        latest = json.loads((args.results / "latest.json").read_text())
        args.readme_file.write_text(readme_section(args.readme_file.read_text(), latest))
        return 0
    if args.check:
        problems = check(args.results, args.readme_file.read_text())
        for p in problems:
            print(f"PROBLEM: {p}", file=sys.stderr)
        return 1 if problems else 0
    latest = join(args.results, args.max_age_s)
    md = markdown(latest)
    (args.results / "latest.md").write_text(md)
    (args.results / "latest.json").write_text(json.dumps(latest, indent=1, default=str) + "\n")
    print(md)
    for p in latest["problems"]:
        print(f"PROBLEM: {p}", file=sys.stderr)
    return 1 if latest["problems"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
