"""check-config warns (stderr, exit 0) about a valid config that would not work as meant."""

from __future__ import annotations

import json
import os
import pwd
import tempfile
from pathlib import Path

import pytest

from edgeprint import cli
from edgeprint.config import load_config, parse_config
from edgeprint.config_checks import warnings
from testbed.proc import ServeProcess
from tests.conftest import config_dict, to_toml

ROOT = Path(__file__).parent.parent


def _check(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, list[str]]:
    code = cli.main(["check-config", str(path)])
    out = capsys.readouterr()
    return code, out.out, out.err.splitlines()


def _write(tmp_path: Path, cfg: dict[str, object]) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(to_toml(cfg))
    return path


def test_example_placeholders_and_loopback_host_are_warned(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """config.example.toml passes, with a warning per placeholder digest and for its loopback
    host next to LAN printers."""
    code, out, err = _check(ROOT / "config.example.toml", capsys)
    assert code == 0
    assert out.startswith("ok: 3 printer(s)")
    assert err[:3] == [
        "warning: tokens[0].sha256: 'kiosk-lobby-1' has the example's placeholder digest, so no "
        "token can match it; make one with: edgeprint token new --role kiosk --name kiosk-lobby-1",
        "warning: tokens[1].sha256: 'tech-1' has the example's placeholder digest, so no token "
        "can match it; make one with: edgeprint token new --role tech --name tech-1",
        "warning: server.host: 127.0.0.1 is loopback, so only programs on this machine reach the "
        "API and no kiosk can, yet printers on the LAN (printer-01, printer-02, labels-01); set it to this "
        "machine's LAN address (edgeprint setup picks one) or 0.0.0.0",
    ]


def test_loopback_host_with_tokens_is_warned(tmp_path: Path) -> None:
    """A loopback host warns when tokens exist even if every printer is on loopback."""
    cfg = parse_config(config_dict(tmp_path))  # printers on 127.0.0.1, two tokens
    assert [w for w in warnings(cfg) if w.startswith("server.host")] == [
        "server.host: 127.0.0.1 is loopback, so only programs on this machine reach the API and "
        "no kiosk can, yet tokens are configured; set it to this machine's LAN address "
        "(edgeprint setup picks one) or 0.0.0.0"
    ]


def test_loopback_host_alone_is_not_warned(tmp_path: Path) -> None:
    """No tokens and only loopback printers: a loopback host is what is meant (no warning)."""
    data = config_dict(tmp_path)
    data["tokens"] = []
    assert not [w for w in warnings(parse_config(data)) if w.startswith("server.host")]


def test_a_lan_config_has_no_warnings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A config listening on the LAN over TLS with real digests and a writable data_dir: no
    warning (its self-signed pair is made at the first start)."""
    path = _write(tmp_path, config_dict(tmp_path / "data", host="0.0.0.0", tls="self-signed"))
    code, _, err = _check(path, capsys)
    assert code == 0
    assert err == []


def test_packaged_unconfigured_file_says_run_setup(capsys: pytest.CaptureFixture[str]) -> None:
    """The package's placeholder config passes with one warning: run edgeprint setup."""
    code, out, err = _check(ROOT / "packaging/deb/config.toml", capsys)
    assert code == 0
    assert out.startswith("ok: 0 printer(s), 0 pool(s), 0 token(s)")
    assert err[0] == (
        "warning: no printers and no tokens: nothing can be printed and nobody can log in; "
        "write the config with: edgeprint setup"
    )


def test_data_dir_the_service_user_cannot_write_is_warned() -> None:
    """A data_dir the service user cannot create or write is named with the folder that stops
    it (its owner and mode); one outside the unit's StateDirectory is named too."""
    user = "nobody"
    if pwd.getpwnam(user).pw_uid == os.geteuid():
        pytest.skip("runs as nobody")
    me = pwd.getpwuid(os.geteuid()).pw_name
    with tempfile.TemporaryDirectory(dir="/tmp") as base:
        top = Path(base)
        top.chmod(0o755)  # others may pass, not write
        closed = top / "closed"
        closed.mkdir()
        closed.chmod(0o700)
        (closed / "inner").mkdir()
        (closed / "inner").chmod(0o777)
        opened = top / "open"
        opened.mkdir()
        opened.chmod(0o777)

        def found(data_dir: Path) -> list[str]:
            cfg = parse_config(config_dict(data_dir, host="0.0.0.0", tls="self-signed"))
            return warnings(cfg, service_user=user)

        assert found(closed / "data") == [
            f"server.data_dir: {closed / 'data'} is outside /var/lib/edgeprint, which the "
            "unit's ProtectSystem=strict leaves read-only to the service; add ReadWritePaths="
            f"{closed / 'data'} with: systemctl edit edgeprint",
            f"server.data_dir: user nobody cannot write {closed / 'data'} ({closed} is "
            f"{me}:{_group(closed)}, mode 0700); the service could not store jobs: chown "
            "nobody it, or use /var/lib/edgeprint",
        ]
        # a folder anyone may write, behind one the user cannot pass: that one is named
        [blocked] = [w for w in found(closed / "inner" / "data") if "cannot write" in w]
        assert f"({closed} is {me}:" in blocked
        assert f"({top} is {me}:{_group(top)}, mode 0755)" in found(top / "data")[1]
        assert [w for w in found(opened / "data") if "cannot write" in w] == []


def _group(path: Path) -> str:
    import grp

    return grp.getgrgid(path.stat().st_gid).gr_name


def test_check_config_warnings_do_not_change_the_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Warnings go to stderr and the exit code stays 0; the ok line stays on stdout."""
    data = config_dict(tmp_path / "data")
    data["tokens"][0]["sha256"] = "f" * 64  # type: ignore[index]
    path = _write(tmp_path, data)
    code, out, err = _check(path, capsys)
    assert code == 0
    assert out.startswith("ok: 3 printer(s)")
    assert err[0].startswith("warning: tokens[0].sha256: 'kiosk-1' has the example's placeholder")
    assert load_config(path).tokens[0].sha256 == "f" * 64


def test_serve_logs_the_warnings_at_start(tmp_path: Path) -> None:
    """serve logs each check-config warning as a config_warning line naming the key."""
    data = config_dict(tmp_path / "data")
    data["tokens"][0]["sha256"] = "0" * 64  # type: ignore[index]
    path = _write(tmp_path, data)
    server = ServeProcess(path, tmp_path / "serve.log")
    with server.start():
        assert server.terminate() == 0
    records = [json.loads(line) for line in server.log_path.read_text().splitlines()
               if line.startswith("{")]  # fmt: skip
    warned = [r for r in records if r.get("event") == "config_warning"]
    assert [r["key"] for r in warned] == ["tokens[0].sha256", "server.host"]
    assert warned[0]["message"].startswith("tokens[0].sha256: 'kiosk-1' has the example's")


def test_a_data_dir_that_is_a_file_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A data_dir that is a regular file (or lies under one) fails check-config with exit 2 and
    an error naming the key, prints no ok line, and leaves the file as it was."""
    blocker = tmp_path / "data"
    blocker.write_text("not a directory\n")
    for data_dir, made in (
        (blocker, ""),
        (blocker / "sub", f", so {blocker / 'sub'} cannot be created"),
    ):
        code, out, err = _check(_write(tmp_path, config_dict(data_dir)), capsys)
        assert (code, out) == (2, "")
        assert err == [
            f"error: server.data_dir: {blocker} is a file, not a directory{made}; point "
            "data_dir at a directory (the package uses /var/lib/edgeprint)"
        ]
    assert blocker.read_text() == "not a directory\n"


def test_a_printer_host_that_does_not_resolve_is_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A printer URI whose host name does not resolve (RFC 6761's .invalid never does) is
    warned about, naming the printer's key, and check-config still exits 0 (a printer may be
    off or unnamed at config time); hosts that are addresses are not looked up."""
    data = config_dict(tmp_path / "data")
    data["printers"][1]["uri"] = "ipp://printer-02.invalid:631/ipp/print"  # type: ignore[index]
    code, out, err = _check(_write(tmp_path, data), capsys)
    assert code == 0
    assert out.startswith("ok: 3 printer(s)")
    unresolved = [line for line in err if line.startswith("warning: printers[")]
    assert len(unresolved) == 1
    assert unresolved[0].startswith(
        "warning: printers[1].uri: 'printer-02': host printer-02.invalid does not resolve ("
    )
    assert unresolved[0].endswith("); the appliance cannot reach the printer until it does")
