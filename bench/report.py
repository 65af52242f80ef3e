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
import re
import sys
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.report_rows import ROWS, Row

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
#: (``bench.print_bench --versus <commit>``, ``bench.restart_bench`` on a kept data folder,
#: adversary runs of chosen seeds kept by name).
OPTIONAL = ("print_versus", "restart", "adversary_issue23", "adversary_issue25")
README = REPO / "README.md"
#: The README's Performance table lies between these lines; ``--readme`` rewrites it.
BEGIN = "<!-- bench.report: generated from bench/results/latest.json; do not edit -->"
END = "<!-- bench.report: end -->"


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
        mine = ROWS[name](d)
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
