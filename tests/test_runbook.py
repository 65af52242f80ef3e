"""docs/RUNBOOK.md and the alerts that point at it (issue 25, item 8).

Every alert in ops/edgeprint.rules.yml carries a ``runbook_url`` to a section of
docs/RUNBOOK.md that exists (its anchor computed the way GitHub computes them), and the
runbook names only metrics, log events and CLI commands that edgeprint has: a runbook
that sends a technician to a name that is not there at 8 a.m. is worse than none.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from edgeprint.cli.parser import parse_args, parser
from testbed.rig import printed_names
from tests.polling import eventually_sync
from tests.test_ops import _rules
from tests.test_readme_blocks import QuickStart, quickstart  # noqa: F401 - the fixture

ROOT = Path(__file__).resolve().parent.parent
RUNBOOK = ROOT / "docs" / "RUNBOOK.md"
#: The symptoms issue 25 asks the runbook to cover, by their stable anchors.
SYMPTOMS = (
    "the-queue-climbs-and-nothing-prints",
    "one-lane-silent",
    "the-same-job-failing-at-the-head",
    "dead-letters-piling-up",
    "badges-on-the-wrong-stock",
    "outcomes-unknown-after-a-power-cut",
    "a-box-down-in-a-two-box-hall",
)


def github_anchor(heading: str) -> str:
    """The id GitHub gives a Markdown heading: lower case, punctuation dropped (word
    characters, spaces and hyphens kept), each space a hyphen."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    """Every heading's anchor in ``markdown`` (duplicates numbered -1, -2 as GitHub does);
    fenced code is skipped, its ``#`` lines are comments."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    fenced = False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        m = re.match(r"#{1,6} (.+)", line)
        if fenced or not m:
            continue
        base = github_anchor(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def test_github_anchor() -> None:
    """The anchor rule, on headings of the kind the runbook has (and would break on)."""
    assert github_anchor("One lane silent") == "one-lane-silent"
    assert github_anchor("A box down in a two-box hall") == "a-box-down-in-a-two-box-hall"
    assert github_anchor("What's `edgeprint status`?") == "whats-edgeprint-status"
    assert anchors("# A\n```sh\n# not a heading\n```\n## A\n") == {"a", "a-1"}


def runbook_problems(rules: list[dict[str, Any]], sections: set[str]) -> list[str]:
    """What is wrong with the rules' runbook_url annotations, one line per alert."""
    problems = []
    for rule in rules:
        url = rule.get("annotations", {}).get("runbook_url")
        if not url:
            problems.append(f"{rule['alert']}: no runbook_url")
            continue
        path, _, anchor = str(url).partition("#")
        if path != "docs/RUNBOOK.md":
            problems.append(f"{rule['alert']}: {url!r} is not docs/RUNBOOK.md#SECTION")
        elif anchor not in sections:
            problems.append(f"{rule['alert']}: {url!r}: no such heading in docs/RUNBOOK.md")
    return problems


def test_every_alert_points_at_a_runbook_section() -> None:
    """Each alert has a runbook_url whose anchor is a heading of docs/RUNBOOK.md."""
    rules = _rules()
    assert rules
    assert runbook_problems(rules, anchors(RUNBOOK.read_text())) == []


def test_the_check_fails_for_a_missing_or_dangling_runbook_url() -> None:
    """The check above reports a rule without the annotation, with a stale anchor, or
    pointing elsewhere."""
    sections = anchors(RUNBOOK.read_text())
    bad: list[dict[str, Any]] = [
        {"alert": "X", "annotations": {}},
        {"alert": "Y", "annotations": {"runbook_url": "docs/RUNBOOK.md#no-such-section"}},
        {"alert": "Z", "annotations": {"runbook_url": "https://example.com/#one-lane-silent"}},
        {"alert": "W", "annotations": {"runbook_url": "docs/RUNBOOK.md#one-lane-silent"}},
    ]
    assert [p.split(":")[0] for p in runbook_problems(bad, sections)] == ["X", "Y", "Z"]


def test_runbook_covers_every_symptom_and_its_own_links_resolve() -> None:
    text = RUNBOOK.read_text()
    sections = anchors(text)
    assert set(SYMPTOMS) <= sections
    for link in re.findall(r"\]\(#([^)]+)\)", text):
        assert link in sections, f"runbook link to #{link}: no such section"


def _prose(text: str) -> str:
    return re.sub(r"```.*?```", "", text, flags=re.S)


def test_runbook_names_only_metrics_that_exist() -> None:
    source = (ROOT / "edgeprint" / "metrics.py").read_text()
    named = set(re.findall(r"\bedgeprint_[a-z0-9_]+\b", RUNBOOK.read_text()))
    assert named, "the runbook names no metric"
    missing = {m for m in named if f'"{m}"' not in source}
    assert not missing, f"not in edgeprint/metrics.py: {sorted(missing)}"


def test_runbook_names_only_log_events_that_exist() -> None:
    """Every event after "log" / "Log:" is a string the code logs."""
    code = "\n".join(p.read_text() for p in (ROOT / "edgeprint").rglob("*.py"))
    events: set[str] = set()
    for run in re.findall(
        r"\b[Ll]og:? ((?:`[a-z_]+`(?:, |,\n| )?(?:with [^`]*|and )?)+)", _prose(RUNBOOK.read_text())
    ):
        events.update(re.findall(r"`([a-z_]+)`", run))
    assert {"job_retry", "job_dead", "printer_down", "lease_taken"} <= events
    missing = {e for e in events if f'"{e}"' not in code}
    assert not missing, f"no such log event in edgeprint/: {sorted(missing)}"


def _subcommands() -> set[str]:
    sub = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    return set(sub.choices)


def _code(text: str) -> str:
    """The runbook's code: fenced blocks and inline spans (the prose may say "edgeprint")."""
    return "\n".join(re.findall(r"```.*?```|`[^`\n]+`", text, flags=re.S))


def test_runbook_commands_exist() -> None:
    """Every ``edgeprint COMMAND`` the runbook's code shows is a command of the CLI."""
    used = set(re.findall(r"\bedgeprint (?:--json )?([a-z][a-z-]+)", _code(RUNBOOK.read_text())))
    assert {"replay", "resolve", "drain", "resume", "cancel", "release", "reprint"} <= used
    missing = used - _subcommands()
    assert not missing, f"not an edgeprint command: {sorted(missing)}"


#: The runbook's placeholders, filled in with values of the right shape.
PLACEHOLDERS = {
    "JOB_ID": "0123456789abcdef0123456789abcdef",
    "ID,ID": "0123456789abcdef0123456789abcdef,fedcba9876543210fedcba9876543210",
    "PRINTER": "printer-01",
    "KEY": "checkin-0001",
}


def _runbook_command_lines() -> list[str]:
    """Each ``edgeprint …`` command in the runbook's code, up to a pipe or ``&&``."""
    lines = []
    for chunk in re.findall(r"```.*?```|`[^`\n]+`", RUNBOOK.read_text(), flags=re.S):
        for line in chunk.strip("`").splitlines():
            line = line.split("  #")[0].strip()
            m = re.match(r"(edgeprint (?:--json )?[a-z][^|&]*)", line)
            if m:
                lines.append(m.group(1).replace("…", "").strip())
    return lines


def test_runbook_commands_parse(capsys: pytest.CaptureFixture[str]) -> None:
    """Every runbook command line, its placeholders filled in, is accepted by the CLI's own
    parser (the flags exist, bulk calls have their --limit, one job or many is right)."""

    lines = _runbook_command_lines()
    assert len(lines) >= 15, lines
    for line in lines:
        for name, value in PLACEHOLDERS.items():
            line = re.sub(rf"\b{re.escape(name)}\b", value, line)
        argv = shlex.split(line)[1:]
        if argv[-1:] == ["reprint"]:  # named in prose only ("or edgeprint reprint once …")
            continue
        try:
            parse_args(argv)
        except SystemExit:
            pytest.fail(f"edgeprint rejects the runbook's {line!r}: {capsys.readouterr().err}")


def test_queue_climbs_runbook_clears_paused_printers(quickstart: QuickStart) -> None:  # noqa: F811
    """Tried on the quick start's printers: with both printers paused a badge waits and
    ``edgeprint status`` says why; the runbook's ``edgeprint resume PRINTER`` prints it,
    once, on that printer."""
    cli = (
        f"EDGEPRINT_URL={quickstart.server.url} "
        f"EDGEPRINT_TOKEN={quickstart.tokens['TECH_TOKEN']} .venv/bin/edgeprint"
    )
    paused = quickstart.run(f"{cli} pause printer-01 && {cli} pause printer-02")
    assert paused.returncode == 0, paused.stderr
    try:
        submit = quickstart.run(
            "source .quickstart/tokens.env && curl -s --cacert .quickstart/tls.crt"
            ' -H "Authorization: Bearer $KIOSK_TOKEN"'
            ' -H "Idempotency-Key: runbook-0001"'
            ' -F \'metadata={"owner":"ada","pool":"lobby","hold":false};'
            "type=application/json'"
            " -F 'document=@.quickstart/badge.pdf;type=application/pdf'"
            f" {quickstart.server.url}/v1/jobs"
        )
        job = json.loads(submit.stdout)
        assert job["state"] == "RELEASED", job
        status = quickstart.run(f"{cli} status")
        assert status.returncode == 0, status.stderr
        for name in ("printer-01", "printer-02"):  # the PAUSED column
            assert re.search(rf"^{name} .* PAUSED ", status.stdout, re.M), status.stdout
        assert re.search(r"^lobby .* 1 ", status.stdout, re.M), status.stdout  # waiting
        resumed = quickstart.run(f"{cli} resume printer-02")
        assert resumed.returncode == 0, resumed.stderr
        eventually_sync(
            lambda: quickstart.job_by_key("runbook-0001")["state"] == "DONE",
            "the badge printed after resume",
            timeout_s=30,
        )
        assert quickstart.job_by_key("runbook-0001")["printed_on"] == "printer-02"
        printed = [line.job_name for line in quickstart.rig.printed("printer-02")]
        assert printed.count(f"edgeprint-{job['id']}") == 1
        assert printed_names(quickstart.rig)[f"edgeprint-{job['id']}"] == ["printer-02"]
    finally:
        quickstart.run(f"{cli} resume printer-01 && {cli} resume printer-02")
