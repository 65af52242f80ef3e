"""The README's Performance figures are the ones in bench/results/latest.json (issue 28, item 6).

``python -m bench.report --check`` (run here as a program: tests import nothing from bench/)
says where they disagree: latest.json's rows are not what the result files give, a
benchmark's result file is not joined, the table between the README's ``bench.report``
markers is not what ``--readme`` renders from latest.json character for character, or the
prose around it quotes a figure with its unit that the table does not show.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def check(readme: Path = README) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bench.report", "--check", "--readme-file", str(readme)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_readme_quotes_latest_json() -> None:
    done = check()
    assert done.returncode == 0, done.stderr


def _changed(tmp_path: Path, old: str, new: str) -> Path:
    text = README.read_text()
    assert old in text, f"{old!r} is no longer in the README: choose another figure"
    copy = tmp_path / "README.md"
    copy.write_text(text.replace(old, new, 1))
    return copy


@pytest.mark.parametrize(
    ("old", "new", "said"),
    [
        pytest.param(
            "| 2,223 (2,057–2,316) /s |",
            "| 2,500 (2,057–2,316) /s |",
            "README's table is not latest.json's",
            id="a figure in the table",
        ),
        pytest.param(
            "13.4 ms of the appliance",
            "8.0 ms of the appliance",
            "README prose quotes '8.0 ms'",
            id="a figure in the prose",
        ),
        pytest.param(
            "<!-- bench.report: end -->",
            "",
            "no '<!-- bench.report",
            id="the markers",
        ),
    ],
)
def test_a_changed_figure_in_a_copy_of_the_readme_is_caught(
    tmp_path: Path, old: str, new: str, said: str
) -> None:
    done = check(_changed(tmp_path, old, new))
    assert done.returncode == 1
    assert said in done.stderr


def test_the_readme_rewritten_from_latest_json_is_the_readme(tmp_path: Path) -> None:
    """``--readme`` puts a changed table back (what ``make bench`` runs after the join)."""
    copy = _changed(tmp_path, "| 2,223 (2,057–2,316) /s |", "| 2,500 (2,057–2,316) /s |")
    argv = [sys.executable, "-m", "bench.report", "--readme", "--readme-file", str(copy)]
    assert subprocess.run(argv, cwd=ROOT, timeout=60, check=False).returncode == 0
    assert copy.read_text() == README.read_text()
