"""``edgeprint tls fingerprint``: what kiosks pin (issue 26).

Read from the certificate file the config names (on the box, as root), else — the file
cannot be read (not root), or ``--url`` names the appliance — from what the server presents
when the CLI connects, said plainly: a certificate read over the network is only as good as
that network. Prints the SHA-256 fingerprint (openssl's form), the ``sha256//`` pin
(curl's), the names and the end of validity, with a warning within 30 days of it;
``--json`` prints what ``GET /v1/tls`` answers.

Read from the file, it is checked too: against its key (when readable here: a pair that
cannot be served is said) and against what the appliance presents when it answers (a
handshake to the config's URL). A file that is not what is served — a reload refused it,
or a restart is still to do — is said plainly and the SERVED certificate is printed, as
that is what kiosks must pin; the exit status is then 1, so a script that hands pins out
stops instead of spreading one the box is not serving, or one a restart would lose.

Exit codes: 0 shown; 1 shown, but the file is not what is served or cannot be served
(stderr says which); 2 bad usage (an unreadable config); 3 nothing answers at the URL.
"""

from __future__ import annotations

import argparse
import datetime
import json
import socket
import ssl
import sys
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from edgeprint import certificates
from edgeprint.cli import locate
from edgeprint.cli.errors import (
    EXIT_API_ERROR,
    EXIT_CONNECT,
    EXIT_OK,
    EXIT_USAGE,
    ConnectFailed,
    UsageError,
)
from edgeprint.cli.render import clean
from edgeprint.timefmt import rfc3339_ms

DEFAULT_TIMEOUT_S = 10.0


def add_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Register ``tls fingerprint`` (it takes the technician commands' --url and --config)."""
    t = sub.add_parser("tls", help="the appliance's TLS certificate")
    tsub = t.add_subparsers(dest="tls_command", required=True, metavar="ACTION")
    tsub.add_parser(
        "fingerprint",
        parents=[common],
        help="what kiosks pin: the certificate's SHA-256 fingerprint and the key's sha256// pin",
        description="The appliance's certificate: SHA-256 fingerprint (openssl's form), "
        "sha256// public key pin (curl --pinnedpubkey), names, end of validity. From the "
        "config's certificate file when it can be read, else read from the server over the "
        "network (--url: always).",
    )


def run(args: argparse.Namespace) -> int:
    """The ``tls fingerprint`` command."""
    try:
        found = _certificate(args)
    except UsageError as exc:
        print(f"edgeprint: {clean(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except ConnectFailed as exc:
        print(f"edgeprint: {clean(str(exc))}", file=sys.stderr)
        return EXIT_CONNECT
    cert = found.cert
    for problem in found.problems:
        print(f"edgeprint: {clean(problem)}", file=sys.stderr)
    now = datetime.datetime.now(datetime.UTC)
    if getattr(args, "json", False):
        print(json.dumps(as_json(cert, now), indent=2))
    else:
        for line in lines(cert, found.source, now):
            print(line)
    if cert.expires_soon(now) and not getattr(args, "json", False):
        days = cert.seconds_left(now) / 86400
        print(
            f"warning: the certificate expires in {days:.1f} days ({cert.not_after:%Y-%m-%d} "
            "UTC): renew it (edgeprint setup --force --new-certificate, or the venue's own "
            "files), reload, and give the kiosks the new pin",
            file=sys.stderr,
        )
    return EXIT_API_ERROR if found.problems else EXIT_OK


@dataclass(frozen=True)
class Found:
    """The certificate to pin, where it was read, and what is wrong on the box (each a line
    for stderr; any makes the exit status 1, the pin printed is still the served one)."""

    cert: certificates.Certificate
    source: str
    problems: tuple[str, ...] = ()


def _certificate(args: argparse.Namespace) -> Found:
    """The certificate: the file, checked against its key and against what is served;
    else the network."""
    url_flag = getattr(args, "url", None)
    where = locate.locate(url_flag, getattr(args, "api_config", None))
    timeout_s = getattr(args, "timeout", DEFAULT_TIMEOUT_S)
    if url_flag is None and where.cert_file is not None:
        try:
            x509 = certificates.read_certificate(where.cert_file)
        except certificates.CertificateError as exc:
            print(
                f"edgeprint: cannot read {where.cert_file} ({exc.reason}): reading the "
                "certificate the appliance presents instead",
                file=sys.stderr,
            )
        else:
            return _checked_file(
                where, certificates.describe(x509, where.cert_file, where.cert_file), timeout_s
            )
    if not where.url.startswith("https://"):
        if where.config is not None:
            raise UsageError(f"{where.config} does not serve TLS ([server] tls): nothing to pin")
        raise UsageError(f"{where.url} is not https://: give --url https://HOST:PORT")
    cert = presented(where.url, timeout_s)
    return Found(
        cert,
        f"READ OVER THE NETWORK from {where.url}: only as good as that network. Compare it "
        "with `sudo edgeprint tls fingerprint` on the box (or GET /v1/tls) before kiosks pin it",
    )


def _checked_file(where: locate.Where, cert: certificates.Certificate, timeout_s: float) -> Found:
    """The config's certificate file, its pair checked (when the key can be read) and
    compared with what the appliance at ``where.url`` presents (when it answers): a file
    changed on disk is not served until a reload accepts it (issue 26 fresh-user 2)."""
    problems = []
    unservable = _pair_problem(where)
    if unservable is not None:
        problems.append(unservable)
    try:
        served = presented(where.url, timeout_s)
    except ConnectFailed as exc:  # not running (yet): what it will serve when it starts
        source = f"from {cert.cert_file}; not compared with what is served: {exc}"
        return Found(cert, source, tuple(problems))
    if served.fingerprint == cert.fingerprint:
        return Found(cert, f"from {cert.cert_file}, which {where.url} serves", tuple(problems))
    problems.insert(
        0,
        f"the file {cert.cert_file} is not what the appliance serves (it serves "
        f"{served.fingerprint}; the file is {cert.fingerprint}): a reload may have refused "
        "it — see `journalctl -u edgeprint | grep tls` — or a restart is still to do; "
        "kiosks must pin what is served (shown below)",
    )
    return Found(served, f"served by {where.url}; NOT the file {cert.cert_file}", tuple(problems))


def _pair_problem(where: locate.Where) -> str | None:
    """Why the certificate file and its key cannot be served, or None (servable, or the
    key is not readable here: not root)."""
    assert where.cert_file is not None
    key_file = where.key_file
    if key_file is None:
        return None
    try:
        with key_file.open("rb"):
            pass
    except PermissionError:
        return None
    except OSError:
        pass  # missing: load() says so
    try:
        certificates.load(where.cert_file, key_file)
    except certificates.CertificateError as exc:
        return (
            f"{where.cert_file} cannot be served: {exc.path}: {exc.reason} (a reload refuses "
            "it and a restart would too; fix the pair)"
        )
    return None


def presented(url: str, timeout_s: float) -> certificates.Certificate:
    """The certificate the server at ``url`` presents (not checked: it is to be shown)."""
    parts = urllib.parse.urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 443
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as raw:
            server_name = None if _is_address(host) else host
            with ctx.wrap_socket(raw, server_hostname=server_name) as tls:
                der = tls.getpeercert(binary_form=True)
    except ssl.SSLError as exc:
        raise ConnectFailed(f"{url}: no TLS handshake ({exc.reason or exc})") from None
    except OSError as exc:
        raise ConnectFailed(f"cannot connect to {url}: {exc.strerror or exc}") from None
    if not der:
        raise ConnectFailed(f"{url} presented no certificate")
    from cryptography import x509

    return certificates.describe(x509.load_der_x509_certificate(der), Path(), Path())


def _is_address(host: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def lines(cert: certificates.Certificate, source: str, now: datetime.datetime) -> list[str]:
    days = cert.seconds_left(now) / 86400
    return [
        f"The appliance's TLS certificate ({source}):",
        f"  SHA-256 fingerprint: {cert.fingerprint}",
        f"  public key pin:      {cert.pin}",
        f"  names:               {', '.join(cert.names) or '(none)'}",
        f"  not after:           {cert.not_after:%Y-%m-%d %H:%M} UTC ({days:.0f} days left)",
        f"curl pins it with: curl --insecure --pinnedpubkey '{cert.pin}' https://HOST:PORT/healthz",
    ]


def as_json(cert: certificates.Certificate, now: datetime.datetime) -> dict[str, object]:
    """The fields of ``GET /v1/tls`` but ``tls`` (the config says it)."""
    return {
        "fingerprint": cert.fingerprint,
        "pin": cert.pin,
        "names": list(cert.names),
        "not_before": rfc3339_ms(cert.not_before.timestamp()),
        "not_after": rfc3339_ms(cert.not_after.timestamp()),
        "expires_soon": cert.expires_soon(now),
    }
