"""Where the appliance's API is, and where the CLI learned it (issue 25).

On the box itself a technician types ``edgeprint status`` with no flags: the API is
found from, in order, ``--url``, ``--config``, ``$EDGEPRINT_URL``, ``$EDGEPRINT_CONFIG``,
the installed config (``/etc/edgeprint/config.toml``), the quick start's
(``.quickstart/config.toml`` under the current directory), else the old default.
Flags come before the environment, so a variable left in a shell never overrides
what was typed. The source travels with the URL, so a refused connection can say
where the URL came from and what to try.

A URL typed by hand (``--url``, ``$EDGEPRINT_URL``) still has the configs searched in
the same order: the first that names the same appliance (same scheme and port, the same
host once ``localhost``/``127.0.0.1``/``::1``/``0.0.0.0`` count as one) lends its
``tech.token``; the others are remembered so a missing token can say whose file is
there (issue 25 follow-up: the RUNBOOK's ``export EDGEPRINT_URL=…`` must work).
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from edgeprint.cli.errors import UsageError

if TYPE_CHECKING:
    from edgeprint.config import ServerConfig

DEFAULT_URL = "http://127.0.0.1:8631"
URL_ENV = "EDGEPRINT_URL"
CONFIG_ENV = "EDGEPRINT_CONFIG"
#: The configs looked for when none is named, in order; a relative one is under the current
#: directory. A list so tests can put the installed path in a temporary folder.
CONFIG_CANDIDATES: list[Path] = [
    Path("/etc/edgeprint/config.toml"),
    Path(".quickstart/config.toml"),
]
#: The address a wildcard bind is reached on from this machine.
_WILDCARD_REACH = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}
#: The most of a config file the CLI reads (a config is a few KiB).
_MAX_CONFIG_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Where:
    """The API's base URL (no trailing slash), where it came from, and the config it came
    from (None: not from a config); ``note`` is a line for stderr (a flag that won)."""

    url: str
    source: str
    config: Path | None = None
    note: str | None = None
    #: Configs found that name another appliance: (path, the URL it names).
    others: tuple[tuple[Path, str], ...] = ()
    #: The appliance's own TLS certificate, as its config names it (None: no TLS, or the
    #: URL is not from a config); the CLI pins it when it can read it (cli/trust.py).
    cert_file: Path | None = None
    #: Its private key, as the config names it (None when ``cert_file`` is).
    key_file: Path | None = None

    @property
    def is_default(self) -> bool:
        return self.source == "the default"

    @property
    def origin(self) -> str:
        """``from /etc/edgeprint/config.toml``, ``from $EDGEPRINT_URL``, ``the default``."""
        return self.source if self.is_default else f"from {self.source}"


def locate(
    url_flag: str | None, config_flag: str | None, env: Mapping[str, str] | None = None
) -> Where:
    """Where the API is, from the flags, the environment and the configs found; raises
    UsageError for a bad URL or a config that is unreadable or names no port."""
    env = os.environ if env is None else env
    if url_flag is not None:
        return _flag_url(check_url(url_flag, "--url"), config_flag, env)
    if config_flag is not None:
        return _from_config(Path(config_flag), str(config_flag))
    if env.get(URL_ENV):
        return _matched(Where(check_url(env[URL_ENV], f"${URL_ENV}"), f"${URL_ENV}"), env)
    if env.get(CONFIG_ENV):
        path = Path(env[CONFIG_ENV])
        return _from_config(path, f"{path} (${CONFIG_ENV})")
    for path in CONFIG_CANDIDATES:
        if os.path.lexists(path):
            return _from_config(path, str(path))
    return Where(DEFAULT_URL, "the default")


def _flag_url(url: str, config_flag: str | None, env: Mapping[str, str]) -> Where:
    """``--url`` wins; a ``--config`` given too is only compared (and its token file used
    when both name the same appliance); the other configs are searched for one that does."""
    where = Where(url, "--url")
    if config_flag is None:
        return _matched(where, env)
    path = Path(config_flag)
    try:
        other = _from_config(path, str(path)).url
    except UsageError as exc:
        note = f"using --url {url}; --config not used: {exc}"
        return replace(_matched(where, env), note=note)
    if same_appliance(other, url):
        mine = _from_config(path, str(path))
        return Where(url, "--url", config=path, cert_file=mine.cert_file, key_file=mine.key_file)
    note = f"--url {url} and --config {path} ({other}) disagree: using --url"
    found = _matched(where, env)
    return replace(found, note=note, others=((path, other), *found.others))


def _matched(where: Where, env: Mapping[str, str]) -> Where:
    """``where`` (a URL typed by hand) with the first config found that names the same
    appliance, and the configs found that name another; an unreadable config is skipped."""
    paths = [Path(env[CONFIG_ENV])] if env.get(CONFIG_ENV) else []
    paths += [p for p in CONFIG_CANDIDATES if os.path.lexists(p)]
    others: list[tuple[Path, str]] = []
    for path in paths:
        try:
            found = _from_config(path, str(path))
        except UsageError:
            continue
        url = found.url
        if same_appliance(url, where.url):
            return replace(
                where,
                config=path,
                others=tuple(others),
                cert_file=found.cert_file,
                key_file=found.key_file,
            )
        others.append((path, url))
    secure = [(p, u) for p, u in others if same_appliance(u, _https(where.url))]
    if secure and where.note is None:  # issue 26: the box now serves TLS on that port
        path, url = secure[0]
        note = f"{path} serves this appliance over TLS: use {url} ({where.source} says http://)"
        return replace(where, others=tuple(others), note=note)
    return replace(where, others=tuple(others))


def _https(url: str) -> str:
    return "https://" + url.removeprefix("http://") if url.startswith("http://") else url


#: Host names that reach this machine itself (a wildcard bind is reached on loopback).
_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0", "::", ""})


def same_appliance(a: str, b: str) -> bool:
    """Whether two API URLs reach the same appliance: same scheme, port and path, and the
    same host once the names of this machine itself count as one."""
    pa, pb = urllib.parse.urlsplit(a), urllib.parse.urlsplit(b)
    try:
        ports = [p.port or (443 if p.scheme == "https" else 80) for p in (pa, pb)]
    except ValueError:
        return False
    hosts = [(p.hostname or "").lower().rstrip(".") for p in (pa, pb)]
    hosts = ["localhost" if h in _LOOPBACK else h for h in hosts]
    return (
        pa.scheme == pb.scheme
        and ports[0] == ports[1]
        and hosts[0] == hosts[1]
        and pa.path.rstrip("/") == pb.path.rstrip("/")
    )


def check_url(url: str, what: str) -> str:
    """``url`` checked and without a trailing slash; ``what`` names it in the refusal."""
    try:
        parts = urllib.parse.urlsplit(url.strip())
    except ValueError as exc:
        raise UsageError(f"bad {what}: {exc}") from None
    if "@" in parts.netloc:  # checked first: never echo a password
        raise UsageError(f"bad {what}: no user or password in the URL; give a token instead")
    try:
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as exc:
        raise UsageError(f"bad {what} {url!r}: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"bad {what} {url!r}: give http://HOST:PORT (e.g. {DEFAULT_URL})")
    if parts.query or parts.fragment:
        raise UsageError(f"bad {what} {url!r}: no query or fragment")
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))


def _from_config(path: Path, source: str) -> Where:
    server = _server(path)
    return Where(
        url_of(server),
        source,
        config=path,
        cert_file=cert_file_of(server, path),
        key_file=key_file_of(server, path),
    )


def cert_file_of(server: ServerConfig, config_path: Path) -> Path | None:
    """The certificate file the appliance serves, as ``load_config`` resolves it: relative
    to the config's folder, ``tls.crt`` there for "self-signed"; None without TLS."""
    from edgeprint.config import SELF_SIGNED_CERT

    if not server.serves_tls:
        return None
    return config_path.parent / (server.cert_file or Path(SELF_SIGNED_CERT))


def key_file_of(server: ServerConfig, config_path: Path) -> Path | None:
    """The private key beside :func:`cert_file_of` (``tls.key`` for "self-signed")."""
    from edgeprint.config import SELF_SIGNED_KEY

    if not server.serves_tls:
        return None
    return config_path.parent / (server.key_file or Path(SELF_SIGNED_KEY))


def _server(path: Path) -> ServerConfig:
    """``[server]`` of the config at ``path``; raises UsageError in a technician's words."""
    import tomllib

    from edgeprint import errors
    from edgeprint.config import parse_config

    try:
        with path.open("rb") as f:
            raw = f.read(_MAX_CONFIG_BYTES + 1)
    except PermissionError:
        raise UsageError(
            f"cannot read {path}: permission denied (it is for root and the edgeprint group): "
            "run the command with sudo, or pass --url http://HOST:PORT and a token"
        ) from None
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file (give --config PATH or --url URL)") from None
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(raw) > _MAX_CONFIG_BYTES:
        raise UsageError(f"{path}: too big for a config (over 1 MiB)")
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"{path} is not a valid config ({exc}): pass --url instead") from None
    try:
        server = parse_config(data, str(path)).server
    except errors.ConfigError as exc:
        raise UsageError(str(exc)) from None
    if server.port == 0:
        raise UsageError(
            f"{path} names no port ([server] port = 0: a free port is picked at each start): "
            "pass --url http://HOST:PORT with the port in the log's 'listening on' line"
        )
    return server


def url_of(server: ServerConfig) -> str:
    """The URL that reaches an appliance listening as ``server`` says, from this machine."""
    host = reach_host(server.host)
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme_of(server)}://{host}:{server.port}"


def scheme_of(server: ServerConfig) -> str:
    """The API's scheme: https when the appliance serves TLS (issue 26), else http."""
    return "https" if server.serves_tls else "http"


def reach_host(bind: str) -> str:
    """The address that reaches a socket bound to ``bind`` from this machine: a wildcard is
    reached on loopback, a LAN address (or a name) on itself."""
    return _WILDCARD_REACH.get(bind.strip(), bind.strip())
