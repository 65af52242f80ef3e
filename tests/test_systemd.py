"""systemd integration: the notify protocol on a real datagram socket, and the unit file."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from testbed.proc import ServeProcess
from tests.conftest import config_dict, to_toml

UNIT = Path(__file__).parent.parent / "systemd" / "edgeprint.service"


def _receive_until(sock: socket.socket, wanted: str, deadline_s: float) -> list[str]:
    """Datagrams received until one contains ``wanted`` (or the deadline passes)."""
    got: list[str] = []
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        sock.settimeout(max(0.01, end - time.monotonic()))
        try:
            got.append(sock.recv(4096).decode())
        except TimeoutError:
            break
        if wanted in got[-1]:
            break
    return got


def test_ready_watchdog_and_stopping_are_notified(tmp_path: Path) -> None:
    """READY=1 after the API listens, WATCHDOG=1 pings, STOPPING=1 on SIGTERM, exit 0."""
    cfg = tmp_path / "config.toml"
    cfg.write_text(to_toml(config_dict(tmp_path / "data")))
    path = tmp_path / "notify.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(str(path))
        env = {"NOTIFY_SOCKET": str(path), "WATCHDOG_USEC": "200000"}
        server = ServeProcess(cfg, tmp_path / "serve.log", env=env)
        with server.start():
            first = _receive_until(sock, "READY=1", 10)
            assert any(m.startswith("READY=1\nSTATUS=listening on 127.0.0.1:") for m in first)
            pings = _receive_until(sock, "never", 0.5)
            assert pings.count("WATCHDOG=1") >= 3  # every 0.1 s: half of WATCHDOG_USEC
            server.proc.send_signal(15)  # type: ignore[union-attr]
            last = _receive_until(sock, "STOPPING=1", 10)
            assert "STOPPING=1\nSTATUS=stopping" in last
            assert server.wait_exit() == 0


def test_outside_systemd_serve_runs_and_stops_cleanly(tmp_path: Path) -> None:
    """No NOTIFY_SOCKET (a stray WATCHDOG_USEC set): the appliance becomes ready, answers,
    logs no error, and SIGTERM ends it with exit 0."""
    cfg = tmp_path / "config.toml"
    cfg.write_text(to_toml(config_dict(tmp_path / "data")))
    env = {"NOTIFY_SOCKET": "", "WATCHDOG_USEC": "200000"}
    server = ServeProcess(cfg, tmp_path / "serve.log", env=env)
    with server.start():
        for path in ("/healthz", "/readyz"):
            with urllib.request.urlopen(f"{server.url}{path}", timeout=10) as resp:
                assert resp.status == 200, path
        assert server.terminate() == 0
    records = [json.loads(line) for line in server.log_path.read_text().splitlines()]
    assert [r["event"] for r in records if r.get("event") in ("ready", "stopped")] == [
        "ready",
        "stopped",
    ], server.tail()
    assert not [r for r in records if r["level"] in ("ERROR", "CRITICAL")], server.tail()


def test_unit_file_has_the_required_settings() -> None:
    """Type=notify with a watchdog, restart on failure, state directory, sandboxing."""
    text = UNIT.read_text()
    for line in (
        "Type=notify", "WatchdogSec=30", "Restart=on-failure", "StateDirectory=edgeprint",
        "NoNewPrivileges=yes", "ProtectSystem=strict", "ProtectHome=yes", "PrivateTmp=yes",
        "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX", "User=edgeprint", "Group=edgeprint",
        "ExecStart=/usr/bin/edgeprint serve --config /etc/edgeprint/config.toml",
        "ExecReload=/bin/kill -HUP $MAINPID",
    ):  # fmt: skip
        assert f"\n{line}\n" in text, line
    stop = int(text.split("TimeoutStopSec=")[1].split()[0])
    assert stop > 10  # above the default shutdown_grace_s


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed")
def test_unit_file_verifies(tmp_path: Path) -> None:
    """systemd-analyze verify accepts the unit (ExecStart pointed at an existing file)."""
    exe = shutil.which("edgeprint") or "/bin/true"
    unit = tmp_path / "edgeprint.service"
    unit.write_text(UNIT.read_text().replace("/usr/bin/edgeprint", exe))
    proc = subprocess.run(
        ["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
