"""SECURITY.md names the test behind each claim (issue 26): every ``tests/FILE::TEST`` it
names exists, and every ``tests/FILE`` it names is a file of the suite."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "SECURITY.md"
NAMED = re.compile(r"`(tests/[\w/]+\.py)(?:::(\w+))?`")


def _tests_in(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name.startswith("test_")
    }


def test_every_test_security_md_names_exists() -> None:
    named = NAMED.findall(DOC.read_text())
    assert len(named) >= 20, "SECURITY.md should point its claims at tests"
    missing = []
    for file, test in named:
        path = ROOT / file
        if not path.is_file():
            missing.append(file)
        elif test and test not in _tests_in(path):
            missing.append(f"{file}::{test}")
    assert not missing, f"SECURITY.md names tests that do not exist: {missing}"


def test_a_name_that_does_not_exist_is_caught() -> None:
    """The check above can fail: a made-up name is not among a real file's tests."""
    assert "test_no_such_claim" not in _tests_in(ROOT / "tests/test_tls_serve.py")
    assert "test_only_tls_1_2_and_newer_are_served" in _tests_in(ROOT / "tests/test_tls_serve.py")
