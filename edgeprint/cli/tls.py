"""``edgeprint tls fingerprint``: what kiosks pin (issue 26).

Read from the certificate file the config names (on the box, as root), else — the file
cannot be read (not root), or ``--url`` names the appliance — from what the server presents
when the CLI connects, said plainly: a certificate read over the network is only as good as
that network. Prints the SHA-256 fingerprint (openssl's form), the ``sha256//`` pin
(curl's), the names and the end of validity, with a warning within 30 days of it;
``--json`` prints what ``GET /v1/tls`` answers.

Exit codes: 0 shown; 2 bad usage (an unreadable config); 3 nothing answers at the URL.
"""

from __future__ import annotations

import argparse
import datetime
import json
import socket
import ssl
import sys
import urllib.parse
from pathlib import Path

from edgeprint import certificates
from edgeprint.cli import locate
from edgeprint.cli.errors import EXIT_CONNECT, EXIT_OK, EXIT_USAGE, ConnectFailed, UsageError
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
        cert, source = _certificate(args)
    except UsageError as exc:
        print(f"edgeprint: {clean(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except ConnectFailed as exc:
        print(f"edgeprint: {clean(str(exc))}", file=sys.stderr)
        return EXIT_CONNECT
    now = datetime.datetime.now(datetime.UTC)
    if getattr(args, "json", False):
        print(json.dumps(as_json(cert, now), indent=2))
        return EXIT_OK
    for line in lines(cert, source, now):
        print(line)
    if cert.expires_soon(now):
        days = cert.seconds_left(now) / 86400
        print(
            f"warning: the certificate expires in {days:.1f} days ({cert.not_after:%Y-%m-%d} "
            "UTC): renew it (edgeprint setup --force --new-certificate, or the venue's own "
            "files), reload, and give the kiosks the new pin",
            file=sys.stderr,
        )
    return EXIT_OK


def _certificate(args: argparse.Namespace) -> tuple[certificates.Certificate, str]:
    """The certificate and where it was read: the file, else the network."""
    url_flag = getattr(args, "url", None)
    where = locate.locate(url_flag, getattr(args, "api_config", None))
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
            cert = certificates.describe(x509, where.cert_file, where.cert_file)
            return cert, f"from {where.cert_file}"
    if not where.url.startswith("https://"):
        if where.config is not None:
            raise UsageError(f"{where.config} does not serve TLS ([server] tls): nothing to pin")
        raise UsageError(f"{where.url} is not https://: give --url https://HOST:PORT")
    cert = presented(where.url, getattr(args, "timeout", DEFAULT_TIMEOUT_S))
    return cert, (
        f"READ OVER THE NETWORK from {where.url}: only as good as that network. Compare it "
        "with `sudo edgeprint tls fingerprint` on the box (or GET /v1/tls) before kiosks pin it"
    )


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
