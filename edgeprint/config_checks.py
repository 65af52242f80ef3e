"""Warnings about a valid config that would still not work as meant (``check-config``).

A config can validate and yet keep every kiosk out (a loopback ``host``), let nobody in
(the example's placeholder digests), or fail at the first job (a ``data_dir`` the service
user cannot write). :func:`warnings` names each such key; ``check-config`` prints them on
stderr and still exits 0. :func:`problems` are errors (the service could not start: exit 2);
:func:`unresolved_hosts` asks DNS, so only ``check-config`` runs it, not a start-up.
"""

from __future__ import annotations

import datetime
import grp
import ipaddress
import os
import pwd
import socket
import stat
from pathlib import Path
from urllib.parse import urlsplit

from edgeprint import certificates
from edgeprint.config import Config

#: The system user of the Debian package and the unit (User=edgeprint).
SERVICE_USER = "edgeprint"
#: The unit's StateDirectory: the only place its ProtectSystem=strict lets the service write.
STATE_DIRECTORY = Path("/var/lib/edgeprint")


def is_placeholder_digest(digest: str) -> bool:
    """True for a digest of one repeated hex digit, like config.example.toml's 000…0 and 111…1."""
    return len(set(digest)) == 1


def is_loopback_host(host: str) -> bool:
    """True when ``host`` (an address or ``localhost``) only reaches this machine."""
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def problems(cfg: Config) -> list[str]:
    """Every error in ``cfg`` that validation cannot see (the file system), naming the key."""
    out = _certificate_problems(cfg)
    data_dir = cfg.server.data_dir
    probe = _nearest_existing(data_dir)
    if probe.is_dir():
        return out
    made = "" if probe == data_dir else f", so {data_dir} cannot be created"
    return [
        f"server.data_dir: {probe} is a file, not a directory{made}; point data_dir at a "
        f"directory (the package uses {STATE_DIRECTORY})",
        *out,
    ]


def _certificate(cfg: Config) -> certificates.Certificate | str | None:
    """The pair the appliance would serve, why it cannot, or None (plain HTTP, or a
    self-signed pair not made yet: the first start makes it)."""
    server = cfg.server
    if not server.serves_tls or server.cert_file is None or server.key_file is None:
        return None
    if server.tls == "self-signed" and not (server.cert_file.exists() or server.key_file.exists()):
        return None
    try:
        return certificates.load(server.cert_file, server.key_file)
    except certificates.CertificateError as exc:
        key = "server.key_file" if exc.path == server.key_file else "server.cert_file"
        return f"{key}: {exc.path}: {exc.reason}; the appliance would not start"


def _certificate_problems(cfg: Config) -> list[str]:
    found = _certificate(cfg)
    return [found] if isinstance(found, str) else []


def _tls(cfg: Config) -> list[str]:
    """Tokens in clear text on the venue network; a certificate close to its end."""
    server = cfg.server
    found = _certificate(cfg)
    if isinstance(found, certificates.Certificate):
        now = datetime.datetime.now(datetime.UTC)
        if found.expires_soon(now):
            days = max(0.0, found.seconds_left(now) / 86400)
            return [
                f"server.cert_file: the certificate {found.cert_file} expires in {days:.0f} "
                f"days ({found.not_after:%Y-%m-%d %H:%M} UTC); renew it and run: "
                "systemctl reload edgeprint"
            ]
        return []
    if not cfg.tokens or is_loopback_host(server.host) or server.serves_tls:
        return []
    if server.tls is None:
        return [
            f"server.tls: not set, so the API and the IPP queues on {server.host} speak plain "
            "HTTP and tokens travel in clear text on the venue network, where anyone can "
            'read them; set [server] tls = "self-signed"'
        ]
    fate = (
        "travel in clear text on the venue network (allow_plain_http = true)"
        if server.plain_tokens_allowed
        else "sent from another machine are refused (426) over plain HTTP"
    )
    return [
        f'server.tls: "off" on {server.host}, a non-loopback host, with tokens: tokens {fate}; '
        '"off" is for loopback development: set [server] tls = "self-signed"'
    ]


def unresolved_hosts(cfg: Config) -> list[str]:
    """A warning per printer whose URI's host name does not resolve now (asks DNS; a
    printer may be off or not yet named at config time, so it is no error)."""
    out: list[str] = []
    failed: dict[str, str] = {}
    for i, p in enumerate(cfg.printers):
        host = urlsplit(p.uri).hostname or ""
        if _is_address(host):
            continue
        if host not in failed:
            try:
                socket.getaddrinfo(host, None)
                failed[host] = ""
            except OSError as exc:
                failed[host] = exc.strerror or str(exc)
        if failed[host]:
            out.append(
                f"printers[{i}].uri: {p.name!r}: host {host} does not resolve "
                f"({failed[host]}); the appliance cannot reach the printer until it does"
            )
    return out


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def _nearest_existing(path: Path) -> Path:
    """``path``, or its nearest existing parent (the service creates data_dir when missing)."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def warnings(cfg: Config, service_user: str = SERVICE_USER) -> list[str]:
    """Every warning about ``cfg``, one line each, naming the key."""
    out: list[str] = []
    if not cfg.printers and not cfg.tokens:
        out.append(
            "no printers and no tokens: nothing can be printed and nobody can log in; "
            "write the config with: edgeprint setup"
        )
    for i, t in enumerate(cfg.tokens):
        if is_placeholder_digest(t.sha256):
            out.append(
                f"tokens[{i}].sha256: {t.name!r} has the example's placeholder digest, so no "
                f"token can match it; make one with: edgeprint token new --role {t.role} "
                f"--name {t.name}"
            )
    out.extend(_loopback(cfg))
    out.extend(_tls(cfg))
    out.extend(_data_dir(cfg.server.data_dir, service_user))
    return out


def _loopback(cfg: Config) -> list[str]:
    host = cfg.server.host
    if not is_loopback_host(host):
        return []
    lan = [p.name for p in cfg.printers if not is_loopback_host(urlsplit(p.uri).hostname or "")]
    if not lan and not cfg.tokens:
        return []
    why = f"printers on the LAN ({', '.join(lan)})" if lan else "tokens are configured"
    return [
        f"server.host: {host} is loopback, so only programs on this machine reach the API "
        f"and no kiosk can, yet {why}; set it to this machine's LAN address (edgeprint setup "
        "picks one) or 0.0.0.0"
    ]


def _data_dir(data_dir: Path, service_user: str) -> list[str]:
    try:
        user: pwd.struct_passwd | None = pwd.getpwnam(service_user)
    except KeyError:
        user = None
    out: list[str] = []
    if user is not None and not _under(data_dir, STATE_DIRECTORY):
        out.append(
            f"server.data_dir: {data_dir} is outside {STATE_DIRECTORY}, which the unit's "
            "ProtectSystem=strict leaves read-only to the service; add ReadWritePaths="
            f"{data_dir} with: systemctl edit edgeprint"
        )
    # The service creates data_dir when missing: then its nearest existing parent counts.
    probe = _nearest_existing(data_dir)
    if not probe.is_dir():
        return out  # an error of its own: problems()
    who = user.pw_name if user is not None else pwd.getpwuid(os.geteuid()).pw_name
    blocked = _blocking(probe, user)
    if blocked is None:
        return out
    try:
        st = blocked.stat()
        owner = f"{_user_name(st.st_uid)}:{_group_name(st.st_gid)}"
        detail = f"{blocked} is {owner}, mode {stat.S_IMODE(st.st_mode):04o}"
    except OSError as exc:
        detail = f"{blocked}: {exc.strerror}"
    out.append(
        f"server.data_dir: user {who} cannot write {data_dir} ({detail}); the service "
        f"could not store jobs: chown {who} it, or use {STATE_DIRECTORY}"
    )
    return out


def _under(path: Path, parent: Path) -> bool:
    try:
        path.resolve().relative_to(parent)
    except ValueError:
        return False
    return True


def _blocking(path: Path, user: pwd.struct_passwd | None) -> Path | None:
    """The folder that keeps ``user`` (None: this process) from creating files in the
    directory ``path`` (``path`` itself or a parent it cannot pass), or None."""
    if user is None or user.pw_uid == os.geteuid():
        return None if path.is_dir() and os.access(path, os.W_OK | os.X_OK) else path
    if user.pw_uid == 0:
        return None
    groups = {user.pw_gid} | {g.gr_gid for g in grp.getgrall() if user.pw_name in g.gr_mem}
    resolved = path.resolve()
    for parent in reversed(resolved.parents):  # from / down: each must let the user through
        if not _allows(parent, user, groups, stat.S_IXUSR, stat.S_IXGRP, stat.S_IXOTH):
            return parent
    write_x = (
        stat.S_IWUSR | stat.S_IXUSR,
        stat.S_IWGRP | stat.S_IXGRP,
        stat.S_IWOTH | stat.S_IXOTH,
    )
    if not resolved.is_dir() or not _allows(resolved, user, groups, *write_x):
        return resolved
    return None


def _allows(path: Path, user: pwd.struct_passwd, groups: set[int], u: int, g: int, o: int) -> bool:
    """Whether ``path``'s mode grants ``user`` the bits of its class (owner, group, other)."""
    try:
        st = path.stat()
    except OSError:
        return False
    if st.st_uid == user.pw_uid:
        need = u
    elif st.st_gid in groups:
        need = g
    else:
        need = o
    return st.st_mode & need == need


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _group_name(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)
