"""The whole file: :class:`Config`, validated (:func:`parse_config`) and read
(:func:`load_config`)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from pydantic import (
    Field,
    ValidationError,
    model_validator,
)

from edgeprint import errors
from edgeprint.config.appliance import (
    ClusterConfig,
    DispatchConfig,
    ReleaseConfig,
    RetentionConfig,
    ServerConfig,
    StoreConfig,
)
from edgeprint.config.base import Frozen
from edgeprint.config.peers import (
    EventConfig,
    IppConfig,
    MetricsConfig,
    PrinterConfig,
    TokenConfig,
    WebhookConfig,
)

# Our own validators put the dotted key first: "Value error, printers[2].name: …".
_KEY_FIRST = re.compile(r"^[a-z_][a-z0-9_.\[\]]*: ")


class Config(Frozen):
    """The whole configuration file."""

    server: ServerConfig = ServerConfig()
    store: StoreConfig = StoreConfig()
    cluster: ClusterConfig = ClusterConfig()
    dispatch: DispatchConfig = DispatchConfig()
    retention: RetentionConfig = RetentionConfig()
    release: ReleaseConfig = ReleaseConfig()
    ipp: IppConfig = IppConfig()
    printers: list[PrinterConfig] = Field(default_factory=list)
    tokens: list[TokenConfig] = Field(default_factory=list)
    webhooks: list[WebhookConfig] = Field(default_factory=list)
    event: EventConfig = EventConfig()
    metrics: MetricsConfig = MetricsConfig()

    @model_validator(mode="after")
    def _unique(self) -> Config:
        _no_duplicates([p.name for p in self.printers], "printers", "name")
        _no_duplicates([w.url for w in self.webhooks], "webhooks", "url")
        _no_duplicates([t.name for t in self.tokens], "tokens", "name")
        _no_duplicates([t.sha256 for t in self.tokens], "tokens", "sha256")
        if self.server.shutdown_grace_s < self.dispatch.request_timeout_s:
            raise ValueError(
                f"server.shutdown_grace_s: {self.server.shutdown_grace_s} s is shorter than "
                f"dispatch.request_timeout_s ({self.dispatch.request_timeout_s} s): an IPP "
                "request in flight at SIGTERM could not finish"
            )
        printer_names = {p.name for p in self.printers}
        for i, q in enumerate(self.ipp.hold_queues):
            if q not in printer_names and q not in self.pools:
                raise ValueError(f"ipp.hold_queues[{i}]: {q!r} is no configured printer or pool")
        for i, t in enumerate(self.tokens):
            for j, name in enumerate(t.printers):
                if name not in printer_names and name not in self.pools:
                    raise ValueError(
                        f"tokens[{i}].printers[{j}]: {name!r} is no configured printer or pool"
                    )
        for i, p in enumerate(self.printers):
            if p.pool is not None and p.pool in printer_names:
                raise ValueError(
                    f"printers[{i}].pool: pool {p.pool!r} has the name of a printer; "
                    "give pools and printers distinct names"
                )
        return self

    @property
    def pools(self) -> dict[str, tuple[str, ...]]:
        """Pool name → names of its printers, in config order."""
        out: dict[str, list[str]] = {}
        for p in self.printers:
            if p.pool is not None:
                out.setdefault(p.pool, []).append(p.name)
        return {k: tuple(v) for k, v in out.items()}

    def printer(self, name: str) -> PrinterConfig | None:
        """The printer called ``name``, or None."""
        return next((p for p in self.printers if p.name == name), None)


def _no_duplicates(values: list[str], section: str, key: str) -> None:
    seen: dict[str, int] = {}
    for i, v in enumerate(values):
        if v in seen:
            raise ValueError(
                f"{section}[{i}].{key}: duplicate value (also {section}[{seen[v]}].{key})"
            )
        seen[v] = i


def _loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out or "(top level)"


def parse_config(data: dict[str, Any], path: str = "<config>") -> Config:
    """Validate an already-parsed TOML table; raises errors.ConfigError."""
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        problems: list[tuple[str, str]] = []
        for err in exc.errors():
            msg = str(err["msg"])
            key = _loc(tuple(err["loc"]))
            if err["type"] == "extra_forbidden":
                msg = "unknown key"
            elif err["type"] == "value_error":
                msg = msg.removeprefix("Value error, ")
                if _KEY_FIRST.match(msg):  # our own model validators name the key first
                    key, msg = msg.split(": ", 1)
            problems.append((key, msg))
        raise errors.ConfigError(path, problems) from None


def load_config(path: str | Path) -> Config:
    """Read and validate a TOML config file; raises errors.ConfigError."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise errors.ConfigError(str(p), [("(file)", exc.strerror or str(exc))]) from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise errors.ConfigError(str(p), [("(file)", "not UTF-8 text")]) from None
    except tomllib.TOMLDecodeError as exc:
        raise errors.ConfigError(str(p), [("(syntax)", str(exc))]) from None
    return _with_tls_paths(parse_config(data, str(p)), p.parent)


#: The self-signed certificate's files, in the config file's folder (issue 26).
SELF_SIGNED_CERT = "tls.crt"
SELF_SIGNED_KEY = "tls.key"


def _with_tls_paths(cfg: Config, folder: Path) -> Config:
    """``cert_file`` and ``key_file`` made absolute against the config file's folder, and
    defaulted there for "self-signed"."""
    server = cfg.server
    if not server.serves_tls:
        return cfg
    cert = server.cert_file or Path(SELF_SIGNED_CERT)
    key = server.key_file or Path(SELF_SIGNED_KEY)
    update = {"cert_file": folder / cert, "key_file": folder / key}  # an absolute one stays
    return cfg.model_copy(update={"server": server.model_copy(update=update)})
