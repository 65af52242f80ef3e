"""`edgeprint setup` serves TLS by default (issue 26): it makes the certificate, shows
what kiosks pin, and keeps the certificate (so the pins) across ``setup --force``."""

from __future__ import annotations

import re
import socket
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

from edgeprint import certificates, setup
from edgeprint.config import load_config
from tests.tls_stub import https_stub

PRINTER = "a=ipp://127.0.0.1:1/ipp/print"
FINGERPRINT_LINE = re.compile(r"^  SHA-256 fingerprint: ([0-9A-F:]{95})$", re.M)
PIN_LINE = re.compile(r"^  public key pin:      (sha256//[A-Za-z0-9+/=]{44})$", re.M)


def _setup(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "edgeprint",
            "setup",
            "--config",
            str(path),
            "--printer",
            PRINTER,
            "--data-dir",
            str(path.parent / "data"),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        input="",
    )


def _shown(stdout: str) -> tuple[str, str]:
    fingerprint = FINGERPRINT_LINE.search(stdout)
    pin = PIN_LINE.search(stdout)
    assert fingerprint, stdout
    assert pin, stdout
    return fingerprint.group(1), pin.group(1)


def _curl(url: str, pin: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            "curl",
            "-sS",
            "--insecure",
            "--pinnedpubkey",
            pin,
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "-H",
            "Authorization: Bearer secret-token",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_setup_writes_tls_and_shows_the_pins(tmp_path: Path) -> None:
    """tls = "self-signed" in the config; tls.crt and tls.key 0600 beside it, naming the
    host, this machine's names and loopback; the printed fingerprint is openssl's, and the
    printed pin is one curl accepts (a wrong one: exit 90, nothing sent)."""
    path = tmp_path / "etc" / "config.toml"
    out = _setup(path, "--host", "127.0.0.1", "--port", "8631")
    assert out.returncode == 0, out.stderr

    assert tomllib.loads(path.read_text())["server"]["tls"] == "self-signed"
    server = load_config(path).server
    assert (server.cert_file, server.key_file) == (path.parent / "tls.crt", path.parent / "tls.key")
    for f in (server.cert_file, server.key_file):
        assert stat.S_IMODE(f.stat().st_mode) == 0o600, f
    cert = certificates.load(server.cert_file, server.key_file)
    hostname = socket.gethostname()
    assert set(cert.names) >= {"127.0.0.1", "localhost", "::1", hostname, f"{hostname}.local"}

    fingerprint, pin = _shown(out.stdout)
    assert (fingerprint, pin) == (cert.fingerprint, cert.pin)
    openssl = subprocess.run(
        ["openssl", "x509", "-noout", "-fingerprint", "-sha256", "-in", str(server.cert_file)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert openssl.stdout.strip() == f"sha256 Fingerprint={fingerprint}"
    assert f"curl --insecure --pinnedpubkey '{pin}' https://127.0.0.1:8631/healthz" in out.stdout
    assert "https:// and ipps:// only" in out.stdout
    assert "new;" in out.stdout

    with https_stub(cert) as stub:
        good = _curl(f"{stub.url}/healthz", pin)
        assert (good.returncode, good.stdout) == (0, "200"), good.stderr
        wrong = _curl(f"{stub.url}/v1/jobs", "sha256//" + "A" * 43 + "=")
        assert wrong.returncode == 90, wrong.stderr  # CURLE_SSL_PINNEDPUBKEYNOTMATCH
        assert stub.requests == [("/healthz", "Bearer secret-token")]  # nothing sent to /v1


def test_setup_force_keeps_the_certificate_unless_asked(tmp_path: Path) -> None:
    """--force keeps a valid certificate (the kiosks' pins hold); --new-certificate makes a
    new one; a pair that no longer loads (its key replaced) is replaced, saying why."""
    path = tmp_path / "config.toml"
    first = _setup(path, "--host", "127.0.0.1")
    assert first.returncode == 0, first.stderr
    pins = _shown(first.stdout)

    kept = _setup(path, "--host", "127.0.0.1", "--force")
    assert kept.returncode == 0, kept.stderr
    assert _shown(kept.stdout) == pins
    assert "kept: the kiosks' pins still hold" in kept.stdout

    renewed = _setup(path, "--host", "127.0.0.1", "--force", "--new-certificate")
    assert renewed.returncode == 0, renewed.stderr
    new_pins = _shown(renewed.stdout)
    assert new_pins[0] != pins[0]
    assert new_pins[1] != pins[1]
    cert = certificates.load(tmp_path / "tls.crt", tmp_path / "tls.key")
    assert (cert.fingerprint, cert.pin) == new_pins

    other = tmp_path / "other"
    certificates.make_self_signed(other / "tls.crt", other / "tls.key", ["localhost"])
    (tmp_path / "tls.key").write_bytes((other / "tls.key").read_bytes())
    replaced = _setup(path, "--host", "127.0.0.1", "--force")
    assert replaced.returncode == 0, replaced.stderr
    assert (
        f"  (the certificate there was replaced: {tmp_path / 'tls.key'}: this key does not "
        f"belong to the certificate {tmp_path / 'tls.crt'})"
    ) in replaced.stdout
    final = certificates.load(tmp_path / "tls.crt", tmp_path / "tls.key")
    assert final.pin not in (pins[1], new_pins[1])
    assert (final.fingerprint, final.pin) == _shown(replaced.stdout)
    assert not list(tmp_path.glob(".tls.*"))  # no staged file left


def test_refused_setup_leaves_the_certificate_alone(tmp_path: Path) -> None:
    """A setup that writes nothing (a bad --host) changes no certificate and stages none."""
    path = tmp_path / "config.toml"
    assert _setup(path, "--host", "127.0.0.1").returncode == 0
    before = {f.name: f.read_bytes() for f in tmp_path.glob("tls.*")}
    out = _setup(path, "--host", "203.0.113.99", "--force", "--new-certificate")
    assert out.returncode == 2
    assert "--host: 203.0.113.99 is not an address of this machine" in out.stderr
    assert {f.name: f.read_bytes() for f in tmp_path.glob("tls.*")} == before
    assert {f.name for f in tmp_path.iterdir()} - {"data"} == {
        "config.toml",
        "tech.token",
        "tls.crt",
        "tls.key",
    }


def test_certificate_names_cover_every_address_setup_chose() -> None:
    """A LAN host: itself, this machine's names, loopback; a wildcard: every LAN address."""
    lan = [setup.Address("eth0", "192.0.2.10", 24), setup.Address("wlan0", "198.51.100.7", 24)]
    addresses = [*lan, setup.Address("lo", "127.0.0.1", 8)]
    hostname = socket.gethostname()
    assert setup.certificate_names("192.0.2.10", addresses) == [
        "192.0.2.10",
        hostname,
        f"{hostname}.local",
        "localhost",
        "127.0.0.1",
        "::1",
    ]
    assert setup.certificate_names("0.0.0.0", addresses) == [
        hostname,
        f"{hostname}.local",
        "localhost",
        "127.0.0.1",
        "::1",
        "192.0.2.10",
        "198.51.100.7",
    ]
    note = setup.host_note("0.0.0.0", 8631, addresses)
    assert "https://192.0.2.10:8631, https://198.51.100.7:8631" in note
    assert "http://" not in note
    assert setup.https_url("0.0.0.0", 8631, addresses) == "https://192.0.2.10:8631"


def test_a_kept_certificate_that_does_not_name_the_host_is_warned(tmp_path: Path) -> None:
    """A valid pair already beside the config is kept (no --force needed for a new config),
    and when it does not name the host setup chose, a warning says how to get one that does."""
    path = tmp_path / "config.toml"
    old = certificates.make_self_signed(tmp_path / "tls.crt", tmp_path / "tls.key", ["printhub"])
    out = _setup(path, "--host", "127.0.0.1")
    assert out.returncode == 0, out.stderr
    assert _shown(out.stdout) == (old.fingerprint, old.pin)
    assert (
        "warning: the kept certificate does not name 127.0.0.1: clients that check names (not "
        "pins) refuse it; --new-certificate makes one that does (kiosks then pin the new key)\n"
    ) in out.stderr
