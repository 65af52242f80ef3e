"""ops/: Prometheus alert rules and the Grafana dashboard match the metrics edgeprint exposes.

Every ``edgeprint_*`` name in the rules and the dashboard must be in a live
``/metrics`` scrape of a real appliance; ``promtool`` checks the rules' syntax,
runs their unit tests (ops/edgeprint.rules.test.yml) and parses every dashboard
query. PyYAML and promtool (Debian package ``prometheus``) skip these locally
when missing and fail in CI, like the rig's printers.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from edgeprint import certificates
from tests.conftest import Appliance
from tests.rig_fixtures import in_ci

OPS = Path(__file__).resolve().parent.parent / "ops"
RULES = OPS / "edgeprint.rules.yml"
RULE_TESTS = OPS / "edgeprint.rules.test.yml"
DASHBOARD = OPS / "grafana-dashboard.json"
_METRIC_RE = re.compile(r"\bedgeprint_[a-z0-9_]+\b")
#: Series Prometheus makes itself (not exposed by edgeprint).
PROMETHEUS_OWN = {"up"}
#: Grafana's variables → something PromQL parses.
GRAFANA_VARS = {
    "$__rate_interval": "1m",
    "$__interval": "1m",
    "$__range": "1h",
    "$instance": ".*",
    "$printer": ".*",
}


def _missing(why: str) -> None:
    if in_ci():
        pytest.fail(f"{why}; CI is set, so this is a failure, not a skip", pytrace=False)
    pytest.skip(f"{why}; set CI=1 to make this a failure")


def _yaml() -> ModuleType:
    try:
        import yaml
    except ImportError:
        _missing("PyYAML not installed (pip install pyyaml; it belongs in the [test] extras)")
    return yaml


def _promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        _missing("promtool not found: install the Debian package prometheus")
    assert found is not None
    return found


def _rules() -> list[dict[str, Any]]:
    doc = _yaml().safe_load(RULES.read_text())
    return [rule for group in doc["groups"] for rule in group["rules"]]


def _dashboard() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return doc


def _panels() -> list[dict[str, Any]]:
    return [p for p in _dashboard()["panels"] if p["type"] != "row"]


def _dashboard_exprs() -> list[str]:
    return [t["expr"] for p in _panels() for t in p["targets"]]


def _as_promql(expr: str) -> str:
    for var, value in GRAFANA_VARS.items():
        expr = expr.replace(var, value)
    assert "$" not in expr, f"unknown Grafana variable in {expr!r}"
    return expr


async def _exposed_names(app: Appliance) -> set[str]:
    """Every series name a scrape of the appliance can have (labelled families included)."""
    async with app.http.get(f"{app.url}/metrics") as r:
        assert r.status == 200
        text = await r.text()
    names: set[str] = set()
    suffixes = {
        "counter": ("_total", "_created"),
        "histogram": ("_bucket", "_count", "_sum", "_created"),
        "summary": ("_count", "_sum", "_created"),
    }
    for family in text_string_to_metric_families(text):
        names.add(family.name)
        names.update(family.name + s for s in suffixes.get(family.type, ()))
        names.update(sample.name for sample in family.samples)
    return names


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


# --- the rules ----------------------------------------------------------------------------


def test_rules_are_complete_alerts() -> None:
    """Every rule is a named alert with a severity, a summary and a description."""
    rules = _rules()
    names = [r["alert"] for r in rules]
    assert len(names) == len(set(names)), f"duplicate alert names: {names}"
    expected = {
        "EdgeprintPrinterDown", "EdgeprintPrinterUnhealthy", "EdgeprintJobWaitingTooLong",
        "EdgeprintBackpressure", "EdgeprintDeadLetterNotEmpty", "EdgeprintQueueNotDraining",
    }  # fmt: skip
    assert expected <= set(names)
    for rule in rules:
        assert rule["labels"]["severity"] in {"warning", "critical"}, rule["alert"]
        assert rule["annotations"]["summary"], rule["alert"]
        assert rule["annotations"]["description"], rule["alert"]
        assert set(rule) <= {"alert", "expr", "for", "labels", "annotations"}, rule["alert"]
    by_name = {r["alert"]: r for r in rules}
    assert by_name["EdgeprintPrinterDown"]["expr"].strip() == "edgeprint_printer_up == 0"
    assert by_name["EdgeprintPrinterDown"]["for"] == "2m"
    assert "rate(edgeprint_backpressure_total[5m]) > 0" in by_name["EdgeprintBackpressure"]["expr"]


def test_every_alert_has_a_unit_test() -> None:
    """ops/edgeprint.rules.test.yml expects each alert to fire somewhere."""
    tests = _yaml().safe_load(RULE_TESTS.read_text())
    fired = {
        m
        for t in tests["tests"]
        for check in t.get("promql_expr_test", [])
        for sample in check.get("exp_samples", [])
        for m in re.findall(r'alertname="([^"]+)"', sample["labels"])
    }
    assert {r["alert"] for r in _rules()} == fired


async def test_rules_and_dashboard_use_metrics_that_exist(app: Appliance) -> None:
    """Every edgeprint_* name in ops/ is in a live /metrics scrape (no typo, no stale name)."""
    exposed = await _exposed_names(app)
    used = {
        "rules": {m for r in _rules() for m in _METRIC_RE.findall(r["expr"])},
        "dashboard": {m for e in _dashboard_exprs() for m in _METRIC_RE.findall(e)},
    }
    missing = {where: sorted(names - exposed) for where, names in used.items() if names - exposed}
    assert not missing, f"not exposed by edgeprint: {missing}"
    # the alerts the brief asks for, by the metric each one watches
    for name in (
        "edgeprint_printer_up", "edgeprint_printer_healthy", "edgeprint_oldest_waiting_seconds",
        "edgeprint_backpressure_total", "edgeprint_dead_letter_jobs", "edgeprint_waiting_jobs",
    ):  # fmt: skip
        assert name in used["rules"], name
    others = {
        m
        for r in _rules()
        for m in re.findall(r"\b([a-z_][a-z0-9_]*)\{", r["expr"])
        if not m.startswith("edgeprint_")
    }
    assert others <= PROMETHEUS_OWN, others


def test_promtool_checks_the_rules() -> None:
    """promtool check rules: syntax, PromQL and templates."""
    proc = _run(_promtool(), "check", "rules", str(RULES))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"SUCCESS: {len(_rules())} rules found" in proc.stdout


def test_promtool_unit_tests_of_the_rules() -> None:
    """promtool test rules: each alert fires (and only then) on synthetic series."""
    proc = _run(_promtool(), "test", "rules", str(RULE_TESTS))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS" in proc.stdout


def test_promtool_accepts_the_readme_scrape_config_with_a_token(tmp_path: Path) -> None:
    """The README's scrape config for ``[metrics] token_required`` (issue 26) is one promtool
    accepts, its ``credentials_file`` pointing at a token file that exists."""
    readme = (OPS.parent / "README.md").read_text()
    blocks = [
        textwrap.dedent(b)
        for b in re.findall(r"^ *```yaml\n(.*?)^ *```$", readme, re.M | re.S)
        if "credentials_file" in b
    ]
    assert len(blocks) == 1, blocks
    token = tmp_path / "edgeprint-viewer.token"
    token.write_text("a-viewer-token\n")
    # The box's certificate (issue 26: scraped over https, its self-signed tls.crt trusted).
    ca = certificates.make_self_signed(
        tmp_path / "edgeprint-hall-a.crt", tmp_path / "tls.key", ["hall-a-printbox"]
    ).cert_file
    config = tmp_path / "prometheus.yml"
    text = blocks[0].replace("/etc/prometheus/edgeprint-viewer.token", str(token))
    config.write_text(text.replace("/etc/prometheus/edgeprint-hall-a.crt", str(ca)))
    assert str(token) in config.read_text()
    assert str(ca) in config.read_text()
    proc = _run(_promtool(), "check", "config", str(config))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS" in proc.stdout


# --- the dashboard ----------------------------------------------------------------------------


def test_dashboard_is_importable() -> None:
    """One dashboard with a stable uid, a Prometheus datasource variable and sound panels."""
    dash = _dashboard()
    assert dash["uid"] == "edgeprint-overview"
    assert dash["title"] == "edgeprint"
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    assert {"instance", "printer"} <= set(variables)
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids)), "duplicate panel ids"
    taken: set[tuple[int, int]] = set()
    for p in dash["panels"]:
        pos = p["gridPos"]
        assert pos["x"] >= 0, p["title"]
        assert pos["x"] + pos["w"] <= 24, p["title"]
        cells = {(x, y) for x in range(pos["x"], pos["x"] + pos["w"])
                 for y in range(pos["y"], pos["y"] + pos["h"])}  # fmt: skip
        assert not cells & taken, f"panel {p['title']!r} overlaps another"
        taken |= cells
    for p in _panels():
        assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, p["title"]
        assert p["targets"], p["title"]
        ref_ids = [t["refId"] for t in p["targets"]]
        assert len(ref_ids) == len(set(ref_ids)), p["title"]
    titles = " ".join(p["title"].lower() for p in _panels())
    for topic in ("waiting", "oldest", "dead-letter", "unhealthy", "down"):
        assert topic in titles, topic


def test_promtool_parses_every_dashboard_query(tmp_path: Path) -> None:
    """Each panel query is valid PromQL once Grafana's variables are filled in."""
    yaml = _yaml()
    exprs = _dashboard_exprs()
    rules = [{"record": f"dashboard:query_{i}", "expr": _as_promql(e)} for i, e in enumerate(exprs)]
    path = tmp_path / "dashboard-queries.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    proc = _run(_promtool(), "check", "rules", str(path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"SUCCESS: {len(exprs)} rules found" in proc.stdout


def test_alerts_name_problems_in_the_pages_words() -> None:
    """Every problem kind an alert names is one edgeprint/printers/problems.py has: the
    page, the CLI, GET /v1/printers and the alerts speak one vocabulary."""
    from edgeprint.printers.problems import KINDS

    named = {
        kind
        for r in _rules()
        for pattern in re.findall(r'edgeprint_printer_problem\{kind=~"([^"]+)"\}', r["expr"])
        for kind in pattern.split("|")
    }
    assert named, "no alert names a problem kind"
    assert named <= set(KINDS), sorted(named - set(KINDS))
