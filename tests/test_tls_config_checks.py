"""check-config on TLS (issue 26): tokens in clear text on the venue network are a warning,
a pair the appliance could not serve is an error (exit 2), a certificate within 30 days of
its end is a warning. Each with its exact words."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest

from edgeprint import certificates, cli
from tests.conftest import config_dict, to_toml

NAMES = ["localhost", "127.0.0.1"]


def _check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], **server: Any
) -> tuple[int, list[str]]:
    path = tmp_path / "config.toml"
    path.write_text(to_toml(config_dict(tmp_path / "data", **server)))
    before = sorted(p.name for p in tmp_path.iterdir())
    code = cli.main(["check-config", str(path)])
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # check-config makes nothing
    return code, capsys.readouterr().err.splitlines()


def _tls_lines(err: list[str]) -> list[str]:
    return [
        line
        for line in err
        if "server.tls" in line or "server.cert_file" in line or "server.key_file" in line
    ]


def test_no_tls_with_tokens_on_the_lan_is_warned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = _check(tmp_path, capsys, host="0.0.0.0")
    assert code == 0
    assert _tls_lines(err) == [
        "warning: server.tls: not set, so the API and the IPP queues on 0.0.0.0 speak plain "
        "HTTP and tokens travel in clear text on the venue network, where anyone can read "
        'them; set [server] tls = "self-signed"'
    ]


def test_no_tls_on_loopback_is_not_warned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for tls in ({}, {"tls": "off"}):
        assert _tls_lines(_check(tmp_path, capsys, host="127.0.0.1", **tls)[1]) == []


@pytest.mark.parametrize(
    ("allow", "fate"),
    [
        (None, "sent from another machine are refused (426) over plain HTTP"),
        (True, "travel in clear text on the venue network (allow_plain_http = true)"),
    ],
)
def test_tls_off_with_tokens_on_the_lan_is_warned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], allow: bool | None, fate: str
) -> None:
    extra = {} if allow is None else {"allow_plain_http": allow}
    code, err = _check(tmp_path, capsys, host="192.0.2.10", tls="off", **extra)
    assert code == 0
    assert _tls_lines(err) == [
        f'warning: server.tls: "off" on 192.0.2.10, a non-loopback host, with tokens: tokens '
        f'{fate}; "off" is for loopback development: set [server] tls = "self-signed"'
    ]


def test_self_signed_not_made_yet_is_fine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = _check(tmp_path, capsys, host="0.0.0.0", tls="self-signed")
    assert code == 0
    assert _tls_lines(err) == []


def _pair(folder: Path, stem: str, **kw: Any) -> certificates.Certificate:
    return certificates.make_self_signed(
        folder / f"{stem}.crt", folder / f"{stem}.key", NAMES, **kw
    )


def test_a_pair_that_cannot_be_served_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good, other = _pair(tmp_path, "good"), _pair(tmp_path, "other")
    code, err = _check(
        tmp_path, capsys, tls="files", cert_file=str(good.cert_file), key_file=str(other.key_file)
    )
    assert code == 2
    assert _tls_lines(err) == [
        f"error: server.key_file: {other.key_file}: this key does not belong to the "
        f"certificate {good.cert_file}; the appliance would not start"
    ]
    past = datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=10)
    old = _pair(tmp_path, "old", now=past, days=2)
    code, err = _check(
        tmp_path, capsys, tls="files", cert_file=str(old.cert_file), key_file=str(old.key_file)
    )
    assert code == 2
    assert _tls_lines(err) == [
        f"error: server.cert_file: {old.cert_file}: expired on "
        f"{old.not_after:%Y-%m-%d %H:%M} UTC; the appliance would not start"
    ]
    (tmp_path / "text.crt").write_text("hello\n")
    code, err = _check(
        tmp_path,
        capsys,
        tls="files",
        cert_file=str(tmp_path / "text.crt"),
        key_file=str(good.key_file),
    )
    assert code == 2
    assert _tls_lines(err) == [
        f"error: server.cert_file: {tmp_path / 'text.crt'}: not a PEM certificate; the "
        "appliance would not start"
    ]
    # A self-signed config with half a pair (the key was deleted) is no pair to make anew.
    good.key_file.unlink()
    code, err = _check(
        tmp_path,
        capsys,
        tls="self-signed",
        cert_file=str(good.cert_file),
        key_file=str(good.key_file),
    )
    assert code == 2
    assert _tls_lines(err) == [
        f"error: server.key_file: {good.key_file}: no private key file here; the appliance "
        "would not start"
    ]


def test_a_certificate_within_30_days_of_its_end_is_warned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    soon = _pair(tmp_path, "soon", days=10)
    code, err = _check(
        tmp_path,
        capsys,
        host="0.0.0.0",
        tls="files",
        cert_file=str(soon.cert_file),
        key_file=str(soon.key_file),
    )
    assert code == 0
    assert _tls_lines(err) == [
        f"warning: server.cert_file: the certificate {soon.cert_file} expires in 10 days "
        f"({soon.not_after:%Y-%m-%d %H:%M} UTC); renew it and run: systemctl reload edgeprint"
    ]
    later = _pair(tmp_path, "later", days=31)
    code, err = _check(
        tmp_path,
        capsys,
        host="0.0.0.0",
        tls="files",
        cert_file=str(later.cert_file),
        key_file=str(later.key_file),
    )
    assert (code, _tls_lines(err)) == (0, [])
