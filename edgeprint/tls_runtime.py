"""The certificate the running appliance serves (issue 26): made at start, read again at
every reload, watched for its end.

:meth:`ServedCertificate.start` — with ``[server] tls = "self-signed"`` and no key or
certificate file yet, makes both (edgeprint.certificates, names from :func:`default_names`);
then loads the pair and builds the listener's ``ssl.SSLContext``. A pair that cannot be
served raises :class:`edgeprint.certificates.CertificateError` with the reason: the
appliance does not start.

:meth:`ServedCertificate.reload` — the files are read again (on every SIGHUP, whether or
not the config changed). A good pair replaces :attr:`context` at once: the listener reads
it for each *new* connection, so connections (and the jobs on them) in flight keep the one
they started with. A bad pair is refused with its reason and the running certificate stays.

The expiry is published as ``edgeprint_tls_certificate_expiry_timestamp_seconds`` and
logged as a warning at start, at reload and once a day (:meth:`watch`) while fewer than
``certificates.EXPIRY_WARNING_S`` are left.
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import logging
import socket
import ssl
from collections.abc import Callable
from pathlib import Path

import ifaddr

from edgeprint import certificates
from edgeprint.certificates import Certificate, CertificateError
from edgeprint.config import SELF_SIGNED_CERT, SELF_SIGNED_KEY, ServerConfig
from edgeprint.logs import log_event
from edgeprint.metrics import Metrics

log = logging.getLogger(__name__)

#: While running, the expiry is looked at this often (seconds).
WATCH_EVERY_S = 86400.0
_WILDCARDS = ("", "0.0.0.0", "::")


def _lan_addresses() -> list[str]:
    out: list[str] = []
    for adapter in ifaddr.get_adapters():
        for ip in adapter.ips:
            raw = ip.ip if ip.is_IPv4 else ip.ip[0]
            assert isinstance(raw, str)
            try:
                addr = ipaddress.ip_address(raw.split("%", 1)[0])
            except ValueError:
                continue
            if not (addr.is_loopback or addr.is_link_local):
                out.append(str(addr))
    return out


def default_names(host: str, lan: Callable[[], list[str]] = _lan_addresses) -> list[str]:
    """What a self-signed certificate names: ``host`` (unless a wildcard), this machine's
    host name and ``<hostname>.local``, localhost and the loopback addresses, and the LAN
    addresses when ``host`` is a wildcard."""
    hostname = socket.gethostname().split(".", 1)[0]
    names: list[str] = []
    if host not in _WILDCARDS:
        names.append(host)
    if hostname:
        names += [hostname, f"{hostname}.local"]
    names += ["localhost", "127.0.0.1", "::1"]
    if host in _WILDCARDS:
        names += lan()
    return list(dict.fromkeys(names))


def _files(server: ServerConfig) -> tuple[Path, Path]:
    """``cert_file`` and ``key_file``; load_config always sets them, a config made otherwise
    (parse_config) gets tls.crt and tls.key in ``data_dir``."""
    cert = server.cert_file or server.data_dir / SELF_SIGNED_CERT
    key = server.key_file or server.data_dir / SELF_SIGNED_KEY
    return cert, key


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


class ServedCertificate:
    """The certificate and ``ssl.SSLContext`` new TLS connections get now."""

    def __init__(self, cert: Certificate, metrics: Metrics | None = None) -> None:
        self.certificate = cert
        self.context: ssl.SSLContext = certificates.server_context(cert)
        self._metrics = metrics
        self._published(reloaded=False)

    @classmethod
    def start(cls, server: ServerConfig, metrics: Metrics | None = None) -> ServedCertificate:
        """The pair ``server`` names (made first for "self-signed" when neither file exists);
        raises CertificateError."""
        cert_file, key_file = _files(server)
        if server.tls == "self-signed" and not cert_file.exists() and not key_file.exists():
            made = certificates.make_self_signed(cert_file, key_file, default_names(server.host))
            log_event(
                log,
                "tls_certificate_made",
                message="made a self-signed TLS certificate",
                cert_file=str(cert_file),
                fingerprint=made.fingerprint,
                pin=made.pin,
                names=list(made.names),
            )
        return cls(certificates.load(cert_file, key_file), metrics)

    def reload(self, server: ServerConfig) -> Certificate:
        """Read ``server``'s pair again and serve it to new connections; raises
        CertificateError (the running certificate stays)."""
        cert = certificates.load(*_files(server))
        context = certificates.server_context(cert)
        self.certificate, self.context = cert, context
        self._published(reloaded=True)
        return cert

    def _published(self, *, reloaded: bool) -> None:
        cert = self.certificate
        if self._metrics is not None:
            self._metrics.tls_certificate_expiry.set(cert.not_after.timestamp())
        log_event(
            log,
            "tls_certificate_reloaded" if reloaded else "tls_certificate",
            message="TLS certificate reloaded" if reloaded else "serving TLS",
            fingerprint=cert.fingerprint,
            pin=cert.pin,
            not_after=cert.not_after.isoformat(),
            cert_file=str(cert.cert_file),
        )
        self.warn_if_expiring()

    def warn_if_expiring(self, now: datetime.datetime | None = None) -> bool:
        """Log a warning when the certificate ends within EXPIRY_WARNING_S; True if it did."""
        cert, when = self.certificate, now or _now()
        if not cert.expires_soon(when):
            return False
        days = cert.seconds_left(when) / 86400
        log_event(
            log,
            "tls_certificate_expires_soon",
            message=f"the TLS certificate {cert.cert_file} expires in {days:.1f} days "
            f"({cert.not_after:%Y-%m-%d %H:%M} UTC): renew it and reload",
            level=logging.WARNING,
            days_left=round(days, 1),
            not_after=cert.not_after.isoformat(),
        )
        return True

    async def watch(self, every_s: float = WATCH_EVERY_S) -> None:
        """Warn every ``every_s`` while the certificate is close to its end; until cancelled."""
        while True:
            await asyncio.sleep(every_s)
            self.warn_if_expiring()


def refused(exc: CertificateError, *, at_start: bool) -> str:
    """The one log line for a pair that cannot be served."""
    if at_start:
        return f"cannot serve TLS: {exc.path}: {exc.reason}"
    return (
        f"TLS certificate reload refused: {exc.path}: {exc.reason}; the running certificate stays"
    )
