"""What ``edgeprint setup`` decides and writes: the listen address, tokens, the config file.

The config is rendered as TOML, read back and validated with the same code as
``check-config`` before it replaces anything. Tokens are generated here and only their
SHA-256 goes into the file; the caller shows the tokens once.
"""

from __future__ import annotations

import dataclasses
import datetime
import grp
import ipaddress
import json
import os
import pwd
import secrets
import socket
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import ifaddr

from edgeprint import certificates, errors, tls_runtime
from edgeprint.api.auth import token_digest
from edgeprint.certificates import Certificate
from edgeprint.config import SELF_SIGNED_CERT, SELF_SIGNED_KEY, Config, parse_config
from edgeprint.config_checks import SERVICE_USER, is_loopback_host

DEFAULT_CONFIG = Path("/etc/edgeprint/config.toml")
DEFAULT_DATA_DIR = Path("/var/lib/edgeprint")
DEFAULT_PORT = 8631
WILDCARDS = ("0.0.0.0", "::")


@dataclass(frozen=True)
class Address:
    """One IPv4 address of this machine."""

    interface: str
    ip: str
    prefix: int

    @property
    def network(self) -> str:
        return str(ipaddress.ip_interface(f"{self.ip}/{self.prefix}").network)


@dataclass(frozen=True)
class NewToken:
    """A generated bearer token: ``secret`` is shown once, ``digest`` is stored."""

    name: str
    role: str
    secret: str

    @property
    def digest(self) -> str:
        return token_digest(self.secret)


def new_token(name: str, role: str) -> NewToken:
    """A random bearer token (256 bits, URL-safe), as ``edgeprint token new`` makes them."""
    return NewToken(name, role, secrets.token_urlsafe(32))


def local_addresses() -> list[Address]:
    """This machine's IPv4 addresses, the LAN ones first, loopback last."""
    out = [
        Address(a.nice_name, str(ip.ip), int(ip.network_prefix))
        for a in ifaddr.get_adapters()
        for ip in a.ips
        if ip.is_IPv4
    ]
    return sorted(out, key=lambda a: (is_loopback_host(a.ip), a.interface, a.ip))


def _route_source(host: str) -> str | None:
    """The local address this machine would use to reach ``host`` (no packet is sent)."""
    try:
        target = ipaddress.ip_address(host)
    except ValueError:
        return None
    if target.version != 4:
        return None
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect((host, 631))  # UDP connect only picks the route
        except OSError:
            return None
        return str(s.getsockname()[0])


def choose_host(printer_uris: list[str], addresses: list[Address]) -> str:
    """The address kiosks should use: the one that reaches the printers, else the first LAN
    address, else loopback."""
    mine = {a.ip for a in addresses}
    for uri in printer_uris:
        host = urlsplit(uri).hostname or ""
        if is_loopback_host(host):
            continue
        source = _route_source(host)
        if source in mine and not is_loopback_host(source or ""):
            return str(source)
    lan = [a for a in addresses if not is_loopback_host(a.ip)]
    return lan[0].ip if lan else "127.0.0.1"


def check_host(host: str, addresses: list[Address]) -> str | None:
    """Why ``host`` cannot be listened on here, or None."""
    if host in WILDCARDS or is_loopback_host(host):
        return None
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return f"--host: {host!r} is not an IP address"
    if host not in {a.ip for a in addresses}:
        listed = ", ".join(f"{a.ip} ({a.interface})" for a in addresses) or "none"
        return f"--host: {host} is not an address of this machine (its addresses: {listed})"
    return None


def certificate_names(host: str, addresses: list[Address]) -> list[str]:
    """The names and addresses the self-signed certificate carries (its subject alternative
    names), as the appliance names one it makes at start: ``host`` (every LAN address when it
    is a wildcard), this machine's host name and ``NAME.local``, and loopback."""
    lan = [a.ip for a in addresses if not is_loopback_host(a.ip)]
    return tls_runtime.default_names(host, lambda: lan)


def host_note(host: str, port: int, addresses: list[Address]) -> str:
    """Who can reach the API at ``host``, in a technician's words."""
    if is_loopback_host(host):
        return (
            f"The API listens on {host}:{port}: only programs on this machine can reach it, "
            "no kiosk can. To serve kiosks: edgeprint setup --force --host ADDRESS."
        )
    if host in WILDCARDS:
        lan = ", ".join(f"https://{a.ip}:{port}" for a in addresses if not is_loopback_host(a.ip))
        return (
            f"The API listens on every interface (port {port}): kiosks reach it at "
            f"{lan or 'this machine`s address'}. Anyone on those networks can connect; "
            "only a token lets them do anything."
        )
    where = next((a for a in addresses if a.ip == host), None)
    network = f" on {where.network} ({where.interface})" if where else ""
    others = [a.ip for a in addresses if a.ip != host and not is_loopback_host(a.ip)]
    tail = f" Other addresses of this machine: {', '.join(others)} (--host)." if others else ""
    return (
        f"The API listens on https://{host}:{port}: kiosks and technicians{network} reach it "
        "there (give the kiosks this URL). Anyone on that network can connect; only a "
        f"token lets them do anything.{tail}"
    )


def https_url(host: str, port: int, addresses: list[Address]) -> str:
    """The API's URL as a kiosk types it: a wildcard bind is named by its first LAN address."""
    if host in WILDCARDS:
        lan = [a.ip for a in addresses if not is_loopback_host(a.ip)]
        host = lan[0] if lan else "127.0.0.1"
    return f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"


def refusal(path: Path) -> str | None:
    """Why setup must not replace ``path`` without --force, or None (absent, or it configures
    nothing, like the package's placeholder)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"{path}: {exc.strerror}"
    try:
        cfg = parse_config(tomllib.loads(raw.decode("utf-8")), str(path))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, errors.ConfigError):
        return f"{path} exists and is not a valid config"
    if not cfg.printers and not cfg.tokens:
        return None
    return (
        f"{path} is already configured ({len(cfg.printers)} printer(s), {len(cfg.tokens)} token(s))"
    )


def build(
    *,
    printers: list[tuple[str, str]],
    pool: str | None,
    host: str,
    port: int,
    data_dir: Path,
    tokens: list[NewToken],
    now: datetime.datetime,
    config_path: Path,
) -> tuple[str, Config]:
    """The config file's text and the config it validates to (raises errors.ConfigError)."""
    lines = [
        f"# Written by edgeprint setup on {now.strftime('%Y-%m-%dT%H:%M:%SZ')}.",
        "# Every key and its default: /usr/share/doc/edgeprint/examples/config.example.toml",
        f"# Check it with: edgeprint check-config {config_path}",
        "",
        "[server]",
        f"host = {_s(host)}",
        f"port = {port}",
        f"data_dir = {_s(str(data_dir))}",
        "# The API and the IPP queues over TLS only (https://, ipps://) with the certificate",
        "# setup made beside this file (tls.crt, tls.key); kiosks pin its key (edgeprint tls",
        '# fingerprint). "files" with cert_file and key_file: the venue\'s own certificate.',
        'tls = "self-signed"',
    ]
    for name, uri in printers:
        lines += ["", "[[printers]]", f"name = {_s(name)}", f"uri = {_s(uri)}"]
        if pool:
            lines.append(f"pool = {_s(pool)}")
    lines += ["", "# Only the SHA-256 of each bearer token is stored (edgeprint token new)."]
    for i, t in enumerate(tokens):
        lines += [
            *([""] if i else []),
            "[[tokens]]",
            f"name = {_s(t.name)}",
            f"role = {_s(t.role)}",
            f"sha256 = {_s(t.digest)}",
        ]
    text = "\n".join(lines) + "\n"
    data: dict[str, Any] = tomllib.loads(text)
    return text, parse_config(data, str(config_path))


def _s(value: str) -> str:
    # A JSON string is a TOML basic string (same escapes).
    return json.dumps(value)


def write(path: Path, text: str) -> None:
    """Replace ``path`` atomically with ``text``: mode 0640, group of the service when it
    exists (so the unit's user reads it), fsync'ed before the rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o640)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fchmod(f.fileno(), 0o640)
            if os.geteuid() == 0:
                gid = _service_gid()
                if gid is not None:
                    os.fchown(f.fileno(), 0, gid)
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def stage_secret(path: Path, text: str) -> Path:
    """A temporary file beside ``path`` holding ``text``: mode 0600, root's when run as
    root (a tech token: for root only, not the service's group), fsync'ed. The caller
    renames it over ``path`` once the config that matches it is written (commit_secret),
    so a failed setup leaves neither."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as f:
            os.fchmod(f.fileno(), 0o600)
            if os.geteuid() == 0:
                os.fchown(f.fileno(), 0, 0)
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def commit_secret(tmp: Path, path: Path) -> None:
    """Put the staged ``tmp`` in place as ``path``, durably."""
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


@dataclass(frozen=True)
class StagedCertificate:
    """The certificate setup serves: kept as it was (``staged`` None), or new and staged
    beside its final files until the config is written (:func:`commit_certificate`)."""

    certificate: Certificate
    #: (staged cert, staged key) to rename over the certificate's files; None: kept.
    staged: tuple[Path, Path] | None
    #: Why an existing certificate was not kept ("" when there was none, or it was kept).
    replaced_because: str = ""


def prepare_certificate(
    folder: Path, names: list[str], *, renew: bool, now: datetime.datetime
) -> StagedCertificate:
    """The self-signed certificate for a config in ``folder``: an existing pair that loads
    (matches, not expired) is kept unless ``renew`` — so the kiosks' pins survive
    ``setup --force``; otherwise a new ECDSA P-256 pair for ``names`` is made and staged."""
    cert_file, key_file = folder / SELF_SIGNED_CERT, folder / SELF_SIGNED_KEY
    why = ""
    if not renew and (os.path.lexists(cert_file) or os.path.lexists(key_file)):
        try:
            return StagedCertificate(certificates.load(cert_file, key_file, now=now), None)
        except certificates.CertificateError as exc:
            why = str(exc)
    tag = secrets.token_hex(4)
    tmp_cert = folder / f".{SELF_SIGNED_CERT}.{tag}.tmp"
    tmp_key = folder / f".{SELF_SIGNED_KEY}.{tag}.tmp"
    made = certificates.make_self_signed(tmp_cert, tmp_key, names, now=now)
    if os.geteuid() == 0:  # the service's user reads them (0600, its own)
        ids = _service_ids()
        for tmp in (tmp_cert, tmp_key):
            os.chown(tmp, *(ids or (0, 0)))
    final = dataclasses.replace(made, cert_file=cert_file, key_file=key_file)
    return StagedCertificate(final, (tmp_cert, tmp_key), why)


def commit_certificate(staged: StagedCertificate) -> None:
    """Put a new certificate's staged files in place (nothing for one kept)."""
    if staged.staged is None:
        return
    tmp_cert, tmp_key = staged.staged
    # both renamed, then one folder fsync: a power cut keeps the old pair or the new one
    os.replace(tmp_key, staged.certificate.key_file)
    commit_secret(tmp_cert, staged.certificate.cert_file)


def discard_certificate(staged: StagedCertificate) -> None:
    """Remove a new certificate's staged files (setup failed: nothing is replaced)."""
    for tmp in staged.staged or ():
        tmp.unlink(missing_ok=True)


def _service_ids() -> tuple[int, int] | None:
    try:
        user = pwd.getpwnam(SERVICE_USER)
    except KeyError:
        return None
    return user.pw_uid, user.pw_gid


def _service_gid() -> int | None:
    try:
        return grp.getgrnam(SERVICE_USER).gr_gid
    except KeyError:
        return None
