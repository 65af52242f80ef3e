"""Config validation and the command line: every bad key is named, exit codes are stable."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from edgeprint import cli
from testbed.proc import ServeProcess
from tests.conftest import config_dict, to_toml

GOOD_HASH = "0" * 64


def _check(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    path = tmp_path / "config.toml"
    path.write_text(text)
    code = cli.main(["check-config", str(path)])
    out = capsys.readouterr()
    return code, out.out + out.err


def test_example_config_is_valid(capsys: pytest.CaptureFixture[str]) -> None:
    """config.example.toml, as shipped, passes check-config."""
    example = Path(__file__).parent.parent / "config.example.toml"
    assert cli.main(["check-config", str(example)]) == 0
    assert capsys.readouterr().out.startswith("ok: 3 printer(s), 1 pool(s), 2 token(s)")


def test_issue_config_keys_work_as_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The keys of the core issue's example are accepted exactly as written."""
    text = f"""
[server]
host = "127.0.0.1"
port = 8631
data_dir = "/var/lib/edgeprint"

[[printers]]
name = "printer-01"
uri = "ipp://10.0.0.21:631/ipp/print"
pool = "lobby"

[[tokens]]
name = "kiosk-lobby-1"
role = "kiosk"
sha256 = "{GOOD_HASH}"
"""
    code, out = _check(tmp_path, text, capsys)
    assert code == 0, out


def _with(**changes: Any) -> dict[str, Any]:
    base = config_dict(Path("/tmp/unused"))
    for dotted, value in changes.items():
        section, _, rest = dotted.partition("__")
        if rest:
            index, _, key = rest.partition("__")
            base[section][int(index)][key] = value
        else:
            base[section] = value
    return base


@pytest.mark.parametrize(
    ("data", "message"),
    [
        pytest.param(_with(server={"port": 70000}), "server.port: Input should be less than or equal to 65535", id="port-range"),
        pytest.param(_with(server={"prot": 1}), "server.prot: unknown key", id="unknown-server-key"),
        pytest.param({**_with(), "extra": {"a": 1}}, "extra: unknown key", id="unknown-section"),
        pytest.param(_with(printers__0__name="Printer 1"), "printers[0].name: String should match pattern", id="printer-name"),
        pytest.param(_with(printers__1__name="printer-01"), "printers[1].name: duplicate value (also printers[0].name)", id="duplicate-printer"),
        pytest.param(_with(printers__0__uri="lpd://x/q"), "printers[0].uri: String should match pattern", id="uri-scheme"),
        pytest.param(_with(printers__0__pool="printer-03"), "printers[0].pool: pool 'printer-03' has the name of a printer", id="pool-is-printer"),
        pytest.param(_with(printers__0__colour=True), "printers[0].colour: unknown key", id="unknown-printer-key"),
        pytest.param(_with(tokens__0__role="admin"), "tokens[0].role: Input should be 'kiosk', 'tech', 'station' or 'viewer'", id="token-role"),
        pytest.param(_with(tokens__0__sha256="abc"), "tokens[0].sha256: String should match pattern", id="token-hash"),
        pytest.param(_with(tokens__1__sha256=config_dict(Path("/x"))["tokens"][0]["sha256"]), "tokens[1].sha256: duplicate value", id="duplicate-hash"),
        pytest.param(_with(store={"synchronous": "OFF"}), "store.synchronous: Input should be 'FULL' or 'NORMAL'", id="synchronous-off"),
        pytest.param(_with(server={"shutdown_grace_s": 2}), "server.shutdown_grace_s: 2.0 s is shorter than dispatch.request_timeout_s (10.0 s)", id="grace-below-request-timeout"),
        pytest.param(_with(dispatch={"request_timeout_s": 30, "upload_timeout_s": 20}), "dispatch.request_timeout_s: must not exceed dispatch.upload_timeout_s", id="request-above-upload"),
        pytest.param(_with(dispatch={"poll_interval_min_s": 1, "poll_interval_max_s": 0.5}), "dispatch.poll_interval_min_s: must not exceed dispatch.poll_interval_max_s", id="poll-order"),
        pytest.param(_with(printers__0__high_water=0), "printers[0].high_water: Input should be greater than or equal to 1", id="high-water"),
        pytest.param(_with(retention={"hold_ttl_s": 0}), "retention.hold_ttl_s: Input should be greater than 0", id="hold-ttl"),
        pytest.param(_with(server={"rate_limit": "lots"}), "server.rate_limit: 'lots' is not a rate limit; write e.g. \"50/second\"", id="rate-limit-words"),
        pytest.param(_with(server={"rate_limit": "10/fortnight"}), "server.rate_limit: '10/fortnight' is not a rate limit", id="rate-limit-unit"),
        pytest.param(_with(server={"rate_limit": "a: b"}), "server.rate_limit: 'a: b' is not a rate limit", id="rate-limit-colon"),
        pytest.param(_with(server={"rate_limit": "0/second"}), "server.rate_limit: '0/second' allows no request at all", id="rate-limit-zero"),
        pytest.param(_with(server={"rate_limit": "5/second;0/minute"}), "server.rate_limit: '5/second;0/minute' allows no request at all", id="rate-limit-zero-second"),
        pytest.param(_with(server={"max_document_pages": 0}), "server.max_document_pages: Input should be greater than or equal to 1", id="pages-zero"),
        pytest.param(_with(server={"max_zpl_labels": 0}), "server.max_zpl_labels: Input should be greater than or equal to 1", id="zpl-labels-zero"),
        pytest.param(_with(server={"max_zpl_labels": 100_001}), "server.max_zpl_labels: Input should be less than or equal to 100000", id="zpl-labels-over"),
        pytest.param(_with(server={"min_free_bytes": -1}), "server.min_free_bytes: Input should be greater than or equal to 0", id="min-free-negative"),
        pytest.param(_with(release={"max_pin_failures": 0}), "release.max_pin_failures: Input should be greater than or equal to 1", id="pin-failures-zero"),
        pytest.param(_with(release={"pin_lockout": 5}), "release.pin_lockout: unknown key", id="pin-unknown-key"),
        pytest.param(_with(printers__0__media="a4"), "printers[0].media[0]: String should match pattern", id="media-not-a-size"),
        pytest.param(_with(printers__0__media="oe_4x3-label_0x3in"), "printers[0].media: oe_4x3-label_0x3in states no size", id="media-zero-size"),
        pytest.param(_with(printers__0__fit="stretch"), "printers[0].fit: Input should be 'exact', 'center' or 'scale'", id="fit-unknown"),
        pytest.param(_with(dispatch={"media_tolerance_mm": 25}), "dispatch.media_tolerance_mm: Input should be less than or equal to 20", id="tolerance-range"),
        pytest.param(_with(dispatch={"media_tolerance_mm": -1}), "dispatch.media_tolerance_mm: Input should be greater than or equal to 0", id="tolerance-negative"),
        pytest.param(_with(store={"query_timeout_s": 0.001}), "store.query_timeout_s: Input should be greater than or equal to 0.1", id="query-timeout-tiny"),
        pytest.param(_with(store={"query_timeout_s": float("nan")}), "store.query_timeout_s: Input should be a finite number", id="query-timeout-nan"),
    ],
)  # fmt: skip
def test_bad_config_names_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data: dict[str, Any], message: str
) -> None:
    """check-config exits 2 and its message names the bad key."""
    code, out = _check(tmp_path, to_toml(data), capsys)
    assert code == 2
    assert message in out


def test_toml_syntax_error_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A TOML syntax error exits 2 and says where."""
    code, out = _check(tmp_path, "[server\nport = 1\n", capsys)
    assert code == 2
    assert "(syntax)" in out
    assert "line 1" in out


def test_missing_config_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A missing file exits 2 with the OS's reason."""
    assert cli.main(["check-config", str(tmp_path / "nope.toml")]) == 2
    assert "No such file or directory" in capsys.readouterr().err


def test_token_new_prints_a_working_hash(capsys: pytest.CaptureFixture[str]) -> None:
    """`token new` prints a token and the [[tokens]] lines holding its SHA-256."""
    import hashlib
    import tomllib

    assert cli.main(["token", "new", "--role", "tech", "--name", "desk-1"]) == 0
    out = capsys.readouterr().out
    token = out.splitlines()[1].removeprefix("# ")
    entry = tomllib.loads(out)["tokens"][0]
    assert entry == {
        "name": "desk-1",
        "role": "tech",
        "sha256": hashlib.sha256(token.encode()).hexdigest(),
    }


def test_serve_with_bad_config_exits_2(tmp_path: Path) -> None:
    """`edgeprint serve` refuses a bad config before starting anything."""
    path = tmp_path / "config.toml"
    path.write_text(to_toml(_with(server={"port": -1})))
    proc = subprocess.run(
        [sys.executable, "-m", "edgeprint", "serve", "--config", str(path)],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "server.port" in proc.stderr


def test_second_appliance_on_same_data_dir_refuses(tmp_path: Path) -> None:
    """Two appliances must never share a data_dir: the second exits 1 and says why."""
    path = tmp_path / "config.toml"
    path.write_text(to_toml(config_dict(tmp_path / "data")))
    with ServeProcess(path, tmp_path / "first.log").start():
        proc = subprocess.run(
            [sys.executable, "-m", "edgeprint", "serve", "--config", str(path)],
            capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
    assert proc.returncode == 1
    assert "another edgeprint is running" in proc.stderr
