"""The README's Performance figures are the ones in bench/results/latest.json (issue 28, item 6).

The table between the README's ``bench.report`` markers is what ``python -m bench.report
--readme`` renders from latest.json, character for character; every figure with a unit the
prose around it quotes is one the table shows; and latest.json's rows are what the report
makes of the result files it names (so a figure cannot be edited in latest.json alone).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from bench import report

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
LATEST = ROOT / "bench" / "results" / "latest.json"

#: A figure with its unit, as prose quotes one: ``13.4 ms``, ``0.306×``, ``5.5 MiB``, ``2,223``
#: next to ``releases/s``.
FIGURE = re.compile(r"(?<![\w.,])(\d[\d,]*(?:\.\d+)?)\s?(×|ms|µs|MiB|KiB|%|/s| \w+/s| s\b)")


def _latest() -> dict[str, Any]:
    latest: dict[str, Any] = json.loads(LATEST.read_text())
    return latest


def _section(readme: str) -> str:
    """The README's Performance section, up to the next ``## `` heading."""
    start = readme.index("\n## Performance\n")
    end = readme.find("\n## ", start + 1)
    return readme[start : end if end > 0 else len(readme)]


def _generated(readme: str) -> str:
    return readme[readme.index(report.BEGIN) + len(report.BEGIN) : readme.index(report.END)]


def _prose_figures(readme: str) -> list[str]:
    section = _section(readme)
    prose = section.replace(_generated(section), "")
    return [m.group(1) for m in FIGURE.finditer(prose)]


def test_readme_table_is_rendered_from_latest_json() -> None:
    readme = README.read_text()
    assert report.BEGIN in _section(readme)
    assert report.END in _section(readme)
    assert report.readme_section(readme, _latest()) == readme, (
        "README's Performance table differs from bench/results/latest.json: "
        "run `python -m bench.report --readme`"
    )


def test_every_figure_the_prose_quotes_is_in_the_table() -> None:
    readme = README.read_text()
    table = _generated(readme)
    figures = _prose_figures(readme)
    assert figures, "the prose quotes no figure: the pattern no longer matches"
    missing = [f for f in figures if not re.search(rf"(?<![\d.,]){re.escape(f)}(?![\d,])", table)]
    assert not missing, f"README Performance prose quotes figures not in latest.json: {missing}"


def test_latest_json_rows_are_what_the_result_files_give() -> None:
    latest = _latest()
    joined = report.join(LATEST.parent, max_age_s=float("inf"))
    assert joined["rows"] == latest["rows"], "run `python -m bench.report` to rejoin latest.json"
    keys = [r["key"] for r in latest["rows"]]
    assert len(keys) == len(set(keys))
    assert all(keys)
    names = {k.split(":")[0] for k in keys}
    assert set(report.BENCHMARKS) <= names, "every benchmark of `make bench` has a row"


def test_every_benchmark_writing_a_result_file_is_joined() -> None:
    written = set()
    for path in (ROOT / "bench").glob("*_bench.py"):
        text = path.read_text()
        written |= set(re.findall(r'parser\("(\w+)"', text))
        written |= set(re.findall(r'RESULTS / "(\w+)\.json"', text))
    joined = set(report.BENCHMARKS) | set(report.OPTIONAL)
    assert written
    assert written - {"startup"} <= joined
    assert "dist" in joined  # bench.startup_bench writes dist.json


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(
            lambda t: t.replace("2,223 (2,057–2,316) /s", "2,500 (2,057–2,316) /s"), id="table"
        ),
        pytest.param(
            lambda t: t.replace("13.4 ms of the appliance", "8.0 ms of the appliance"), id="prose"
        ),
    ],
)
def test_a_changed_figure_in_a_copy_of_the_readme_is_caught(change: Any, tmp_path: Path) -> None:
    readme = README.read_text()
    changed = change(readme)
    assert changed != readme, "the figure this test changes is no longer in the README"
    copy = tmp_path / "README.md"
    copy.write_text(changed)
    text = copy.read_text()
    in_table = report.readme_section(text, _latest()) == text
    table = _generated(text)
    in_prose = all(
        re.search(rf"(?<![\d.,]){re.escape(f)}(?![\d,])", table) for f in _prose_figures(text)
    )
    assert not (in_table and in_prose)


def test_the_readme_without_markers_is_refused() -> None:
    with pytest.raises(ValueError, match="block"):
        report.readme_section("## Performance\n\nno table\n", _latest())
