"""The CLI over https (issue 26): it pins the appliance's own certificate, or the pin it is
given, and sends nothing to a server that presents another.

The server is aiohttp with ``certificates.server_context`` (what the appliance serves
with) on loopback, in a thread (tests/tls_stub.py); it records what reached it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.serialization import Encoding

from edgeprint import certificates, cli
from edgeprint.cli import locate, trust
from edgeprint.cli.errors import UsageError
from edgeprint.config import parse_config
from edgeprint.server import running
from tests.conftest import TECH_TOKEN, config_dict, to_toml
from tests.tls_stub import https_stub


@pytest.fixture
def cert(tmp_path: Path) -> certificates.Certificate:
    return certificates.make_self_signed(
        tmp_path / "etc" / "tls.crt", tmp_path / "etc" / "tls.key", ["localhost", "127.0.0.1"]
    )


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("EDGEPRINT_URL", "EDGEPRINT_CONFIG", "EDGEPRINT_TOKEN", "EDGEPRINT_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv(trust.FINGERPRINT_ENV, raising=False)
    monkeypatch.setattr("edgeprint.cli.locate.CONFIG_CANDIDATES", [tmp_path / "none.toml"])


def _config(folder: Path, port: int, **server: str) -> Path:
    data = config_dict(folder / "data", host="127.0.0.1", port=port)
    data["server"].update({"tls": "self-signed", **server})
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "config.toml"
    path.write_text(to_toml(data))
    (folder / "tech.token").write_text(TECH_TOKEN + "\n")
    (folder / "tech.token").chmod(0o600)
    return path


def _jobs(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(["jobs", "--json", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.usefixtures("clean_env")
def test_config_with_tls_pins_its_certificate_file(
    tmp_path: Path, cert: certificates.Certificate, capsys: pytest.CaptureFixture[str]
) -> None:
    """A config with tls = "self-signed": the CLI goes https:// and trusts exactly the
    certificate beside the config (no flag); the token arrives."""
    with https_stub(cert) as stub:
        path = _config(tmp_path / "etc", stub.port)
        code, out, err = _jobs(capsys, "--config", str(path))
        assert (code, err) == (0, "")
        assert '"path": "/v1/jobs"' in out
        assert stub.requests == [("/v1/jobs", f"Bearer {TECH_TOKEN}")]


@pytest.mark.usefixtures("clean_env")
def test_a_renewed_or_foreign_certificate_is_refused_before_sending(
    tmp_path: Path, cert: certificates.Certificate, capsys: pytest.CaptureFixture[str]
) -> None:
    """The server presents another certificate than the config's file: exit 3, both
    fingerprints named and what to do; nothing reached the server."""
    other = certificates.make_self_signed(tmp_path / "o.crt", tmp_path / "o.key", ["localhost"])
    with https_stub(other) as stub:
        path = _config(tmp_path / "etc", stub.port)
        code, out, err = _jobs(capsys, "--config", str(path))
        assert code == 3
        assert out == ""
        assert err == (
            f"edgeprint: {stub.url} presented a certificate with SHA-256 {other.fingerprint}, "
            f"not the pinned {cert.fingerprint} (from {cert.cert_file}); nothing was sent. "
            f"{cert.cert_file} may have been changed without the appliance serving it (a "
            "reload that refused it: journalctl -u edgeprint | grep tls; or a restart still to "
            "do): sudo edgeprint tls fingerprint compares the two. If not, something on the "
            "network is answering in its place\n"
        )
        assert stub.requests == []


@pytest.mark.usefixtures("clean_env")
@pytest.mark.parametrize("form", ["fingerprint", "fingerprint-lower", "pin"])
def test_fingerprint_flag_and_variable_take_either_form(
    tmp_path: Path,
    cert: certificates.Certificate,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    form: str,
) -> None:
    """From elsewhere (--url, no config): --fingerprint or $EDGEPRINT_TLS_FINGERPRINT, as
    openssl prints it (any case) or as curl's sha256// pin."""
    value = {
        "fingerprint": cert.fingerprint,
        "fingerprint-lower": cert.fingerprint.lower().replace(":", ""),
        "pin": cert.pin,
    }[form]
    with https_stub(cert) as stub:
        code, _, err = _jobs(capsys, "--url", stub.url, "--token", "t0ken", "--fingerprint", value)
        assert (code, err) == (0, "")
        monkeypatch.setenv(trust.FINGERPRINT_ENV, value)
        code, _, err = _jobs(capsys, "--url", stub.url, "--token", "t0ken")
        assert (code, err) == (0, "")
        assert stub.requests == [("/v1/jobs", "Bearer t0ken")] * 2


@pytest.mark.usefixtures("clean_env")
def test_a_wrong_pin_is_refused_and_names_both(
    tmp_path: Path, cert: certificates.Certificate, capsys: pytest.CaptureFixture[str]
) -> None:
    """A sha256// pin of another key: exit 3, both key pins named, nothing sent."""
    other = certificates.make_self_signed(tmp_path / "o.crt", tmp_path / "o.key", ["localhost"])
    with https_stub(cert) as stub:
        code, _, err = _jobs(
            capsys, "--url", stub.url, "--token", "t0ken", "--fingerprint", other.pin
        )
        assert code == 3
        assert err.startswith(
            f"edgeprint: {stub.url} presented a public key with SHA-256 {cert.pin}, not the "
            f"pinned {other.pin} (from --fingerprint); nothing was sent."
        )
        assert stub.requests == []


@pytest.mark.usefixtures("clean_env")
def test_no_pin_falls_back_to_the_system_cas_and_says_what_to_give(
    tmp_path: Path, cert: certificates.Certificate, capsys: pytest.CaptureFixture[str]
) -> None:
    """--url with no pin and no config: the system CAs refuse a self-signed appliance; the
    message says to give --fingerprint. A config whose certificate file is missing says so."""
    with https_stub(cert) as stub:
        code, _, err = _jobs(capsys, "--url", stub.url, "--token", "t0ken")
        assert code == 3
        assert err.startswith(
            f"edgeprint: {stub.url}: its certificate is not signed by a CA this machine trusts "
            "(self-signed certificate); a self-signed appliance is pinned instead, and its "
            "certificate could not be read: no config of it was found. Give --fingerprint"
        ), err
        path = _config(tmp_path / "etc", stub.port, cert_file="gone.crt", key_file="tls.key")
        code, _, err = _jobs(capsys, "--config", str(path))
        assert code == 3
        assert (
            f"its certificate could not be read: no certificate file here "
            f"({tmp_path / 'etc' / 'gone.crt'})"
        ) in err
        assert stub.requests == []


@pytest.mark.usefixtures("clean_env")
def test_https_to_a_plain_port_says_use_http(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A config that says TLS, an appliance that serves plain HTTP (not restarted yet)."""
    with https_stub(None) as stub:
        path = _config(tmp_path / "etc", stub.port)
        code, _, err = _jobs(capsys, "--config", str(path))
        assert code == 3
        assert (
            f"https://127.0.0.1:{stub.port} (from {path}) answered plain HTTP: use http://" in err
        )
        assert stub.requests == []


@pytest.mark.parametrize(
    "text",
    ["AB:CD", "sha256//abc", "sha1:" + "00" * 20, "sha256//" + "A" * 40 + "==", "x" * 64],
)
def test_bad_pins_are_usage_errors(text: str) -> None:
    with pytest.raises(UsageError, match=r"^bad --fingerprint: give the certificate's SHA-256"):
        trust.parse_pin(text, "--fingerprint")


def test_pins_parse_to_their_digests(cert: certificates.Certificate) -> None:
    der = certificates.read_certificate(cert.cert_file).public_bytes(Encoding.DER)
    for text in (cert.fingerprint, "sha256:" + cert.fingerprint.lower(), cert.pin):
        pin = trust.parse_pin(text, "x")
        assert pin.matches(der)
        assert pin.shown() in (cert.fingerprint, cert.pin)


@pytest.mark.usefixtures("clean_env")
async def test_http_to_the_tls_port_says_use_https(
    tmp_path: Path, cert: certificates.Certificate, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real appliance serving TLS, the CLI given http://: a GET (308 to https://) and a
    POST (426) both say to use https://, naming the URL; nothing is changed."""
    data = config_dict(tmp_path / "data")
    data["server"].update(
        {"tls": "self-signed", "cert_file": str(cert.cert_file), "key_file": str(cert.key_file)}
    )
    async with running(parse_config(data)) as run:
        plain = f"http://127.0.0.1:{run.port}"
        want = (
            f"edgeprint: {plain} (from --url) serves TLS: use https:// "
            f"(https://127.0.0.1:{run.port}; the CLI pins the certificate of the config it "
            "finds, or give --fingerprint)\n"
        )
        for argv in (["jobs"], ["pause", "printer-01"]):
            code = await asyncio.to_thread(cli.main, [*argv, "--url", plain, "--token", TECH_TOKEN])
            out = capsys.readouterr()
            assert (code, out.out, out.err) == (3, "", want), argv
        [printer] = [p for p in run.dispatcher.snapshots() if p.name == "printer-01"]
        assert not printer.paused


def test_an_http_url_for_an_appliance_whose_config_serves_tls_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """$EDGEPRINT_URL=http://… left from before TLS, for the appliance a config found now
    serves over https: the note says which URL to use (the RUNBOOK's old export)."""
    path = _config(tmp_path / "etc", 8631)
    monkeypatch.setattr("edgeprint.cli.locate.CONFIG_CANDIDATES", [path])
    where = locate.locate(None, None, {"EDGEPRINT_URL": "http://localhost:8631"})
    assert where.url == "http://localhost:8631"
    assert where.config is None  # no token file lent to another scheme
    assert where.note == (
        f"{path} serves this appliance over TLS: use https://127.0.0.1:8631 ($EDGEPRINT_URL "
        "says http://)"
    )
