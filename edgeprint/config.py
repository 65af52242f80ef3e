"""Configuration: a TOML file validated by pydantic (frozen, unknown keys refused).

Load with :func:`load_config`; every problem raises :class:`errors.ConfigError`
naming the bad key in dotted form (``printers[1].pool``).
"""

from __future__ import annotations

import base64
import ipaddress
import re
import socket
import tomllib
import urllib.parse
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal

import limits
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from edgeprint import errors, media_fit
from edgeprint.printers import tls
from edgeprint.stock import media_name_size

NAME_PATTERN = r"^[a-z0-9-]{1,40}$"
# Our own validators put the dotted key first: "Value error, printers[2].name: …".
_KEY_FIRST = re.compile(r"^[a-z_][a-z0-9_.\[\]]*: ")
Name = Annotated[str, Field(pattern=NAME_PATTERN)]
#: A PWG 5101.1 self-describing media name that states its size (``oe_4x3-label_4x3in``).
MediaName = Annotated[
    str, Field(pattern=r"^[a-z0-9-]+_[a-z0-9.-]+_[0-9]+(\.[0-9]+)?x[0-9]+(\.[0-9]+)?(in|mm)$",
               max_length=80),
]  # fmt: skip


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ServerConfig(_Frozen):
    """``[server]``: where the API listens and where state lives."""

    host: str = "127.0.0.1"
    port: int = Field(default=8631, ge=0, le=65535, description="0 picks a free port")
    data_dir: Path = Path("/var/lib/edgeprint")
    max_document_bytes: int = Field(default=20 * 1024 * 1024, ge=1024, le=1024**3)
    max_metadata_bytes: int = Field(default=16 * 1024, ge=256, le=1024 * 1024)
    shutdown_grace_s: float = Field(default=10.0, ge=0, le=300)
    #: Pages per document, counted by pypdf; more → 422 too-many-pages.
    max_document_pages: int = Field(default=200, ge=1, le=100_000)
    #: Labels per ZPL document (each format's ^PQ quantity, summed); more → 422
    #: too-many-labels. issue 23 (zpl)
    max_zpl_labels: int = Field(default=1000, ge=1, le=100_000)
    #: Longest request line / header field (bytes); longer → 400.
    max_header_bytes: int = Field(default=8190, ge=1024, le=65_536)
    #: Most header fields per request; more → 400.
    max_headers: int = Field(default=64, ge=8, le=1024)
    #: Seconds a connection may stay without a complete request head (idle keep-alive,
    #: or a slow client dripping headers) before it is closed.
    idle_timeout_s: float = Field(default=15.0, gt=0, le=3600)
    #: Seconds for a request body (the upload) to arrive in full; slower → 408.
    body_timeout_s: float = Field(default=120.0, gt=0, le=3600)
    #: Open client connections at most; further ones are closed at once.
    max_connections: int = Field(default=2048, ge=4, le=65_536)
    #: Requests per bearer token, in the ``limits`` notation ("50/second", "600/minute",
    #: several separated by ";"); more → 429 with Retry-After.
    rate_limit: str = Field(default="50/second;1000/minute", min_length=1, max_length=200)
    #: Free bytes to keep on data_dir's filesystem: a document that would leave less is
    #: refused with 507, so jobs already accepted can still record their progress.
    min_free_bytes: int = Field(default=64 * 1024 * 1024, ge=0)
    #: issue 26. "self-signed": the API and the IPP queues over TLS (https://, ipps://) with
    #: a certificate edgeprint makes (edgeprint.certificates); "files": with the venue's own
    #: ``cert_file`` and ``key_file``; "off": plain HTTP (loopback development). Absent
    #: (None): plain HTTP as before TLS existed, so an upgraded config keeps its kiosks.
    tls: Literal["self-signed", "files", "off"] | None = None
    #: PEM certificate (chain) and private key. Relative paths are read from the config
    #: file's folder; with "self-signed" they default to tls.crt and tls.key there.
    cert_file: Path | None = None
    key_file: Path | None = None
    #: A bearer token or IPP credentials sent without TLS from another address than the
    #: box's own loopback are refused, unless this says the venue accepted the risk.
    #: None: true only when ``tls`` is absent (the config predates TLS).
    allow_plain_http: bool | None = None

    @property
    def serves_tls(self) -> bool:
        """The API and queues are served over TLS."""
        return self.tls in ("self-signed", "files")

    @property
    def plain_tokens_allowed(self) -> bool:
        """Tokens may arrive over plain HTTP from off the box."""
        return self.tls is None if self.allow_plain_http is None else self.allow_plain_http

    @model_validator(mode="after")
    def _tls_files(self) -> ServerConfig:
        if self.tls == "files" and (self.cert_file is None or self.key_file is None):
            raise ValueError(
                'server.tls: "files" needs cert_file and key_file (PEM), e.g. '
                'cert_file = "/etc/edgeprint/venue.crt"'
            )
        if self.tls in ("off", None) and (self.cert_file or self.key_file):
            raise ValueError(
                'server.cert_file: a certificate is only used with tls = "files" or "self-signed"'
            )
        return self

    @field_validator("rate_limit")
    @classmethod
    def _rate_limit(cls, value: str) -> str:
        try:
            parsed = limits.parse_many(value)
        except ValueError:
            raise ValueError(
                f'{value!r} is not a rate limit; write e.g. "50/second" or "50/second;1000/minute"'
            ) from None
        if any(item.amount < 1 for item in parsed):
            raise ValueError(
                f"{value!r} allows no request at all; each limit needs at least 1 (e.g. "
                '"1/second"); to shut the API, stop the service instead'
            )
        return value


class ReleaseConfig(_Frozen):
    """``[release]``: release PINs (DESIGN §5)."""

    #: Wrong PINs in a row for one job before its release is locked.
    max_pin_failures: int = Field(default=5, ge=1, le=100)
    #: Seconds a job's release stays locked after max_pin_failures wrong PINs.
    pin_lockout_s: float = Field(default=300.0, gt=0, le=86_400)
    #: Reprints of one DONE job (POST /v1/jobs/{id}/reprint, issue 24); 0: none allowed.
    max_reprints: int = Field(default=3, ge=0, le=1000)
    #: The address people's phones reach the appliance at, e.g. ``http://print.example.org:8631``:
    #: printer stickers' QR codes point at ``{public_url}/release/{name}`` (issue 24). None: the
    #: address the sticker was asked at (or the box's own).
    public_url: str | None = Field(default=None, max_length=200)
    #: ``GET /upload``: a page where anyone on the allowed networks ([ipp] allowed_networks)
    #: uploads a PDF as a HELD job under their name and is shown its one-time PIN (issue 24).
    web_upload: bool = False
    #: Uploads from that page per client address, in the ``limits`` notation; more → 429.
    upload_rate_limit: str = Field(default="10/minute;60/hour", min_length=1, max_length=200)

    @field_validator("upload_rate_limit")
    @classmethod
    def _upload_rate_limit(cls, value: str) -> str:
        try:
            parsed = limits.parse_many(value)
        except ValueError:
            raise ValueError(f'{value!r} is not a rate limit; write e.g. "10/minute"') from None
        if any(item.amount < 1 for item in parsed):
            raise ValueError(f"{value!r} allows no upload; set web_upload = false instead")
        return value

    @field_validator("public_url")
    @classmethod
    def _public_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urllib.parse.urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.query:
            raise ValueError(f"{value[:80]!r} is not an http:// or https:// URL with a host")
        return value.rstrip("/")


class StoreConfig(_Frozen):
    """``[store]``: which database, SQLite durability and the group-commit writer."""

    #: None: the embedded SQLite file under data_dir. ``postgresql://user:password@host:port/db``
    #: (libpq URL; ``?sslmode=…`` and other libpq parameters allowed): a PostgreSQL database.
    url: str | None = Field(default=None, max_length=2048)
    synchronous: Literal["FULL", "NORMAL"] = "FULL"
    busy_timeout_ms: int = Field(default=5000, ge=0, le=600_000)
    max_batch: int = Field(default=512, ge=1, le=10_000)
    #: PostgreSQL only: connections that serve reads (writes have one of their own; reads
    #: queued together go in one round trip).
    readers: int = Field(default=4, ge=1, le=64)
    #: PostgreSQL only: how long opening the store may wait for the server.
    connect_timeout_s: float = Field(default=10.0, gt=0, le=300)
    #: PostgreSQL only: how long one group commit or read may wait for the server (a primary
    #: cut off the network, a strict synchronous primary with no standby) before its callers
    #: get 503 ``store-unavailable`` and the connection is dropped (DESIGN §10 "failover").
    query_timeout_s: float = Field(default=5.0, ge=0.1, le=300, allow_inf_nan=False)
    #: PostgreSQL only: let several appliances use the database at once (DESIGN §10 "two
    #: boxes"). False: the first appliance holds it and a second one's start-up is refused.
    shared: bool = False

    @field_validator("url")
    @classmethod
    def _postgresql_url(cls, url: str | None) -> str | None:
        if url is not None and not url.startswith(("postgresql://", "postgres://")):
            raise ValueError(
                "must be a PostgreSQL URL (postgresql://user:password@host:port/database); "
                "leave it out for the embedded SQLite file"
            )
        return url

    @model_validator(mode="after")
    def _shared_needs_postgresql(self) -> StoreConfig:
        if self.shared and self.url is None:
            raise ValueError(
                'store.shared: true needs url = "postgresql://…"; the SQLite file under data_dir '
                "belongs to one appliance"
            )
        return self


class DispatchConfig(_Frozen):
    """``[dispatch]``: how workers talk to printers. Times in seconds."""

    request_timeout_s: float = Field(default=10.0, gt=0, le=300)
    upload_timeout_s: float = Field(default=60.0, gt=0, le=3600)
    poll_interval_min_s: float = Field(default=0.005, gt=0, le=10)
    poll_interval_max_s: float = Field(default=0.5, gt=0, le=60)
    #: Following a job the printer has: Get-Job-Attributes at most this far apart, so a
    #: finished job is noticed within this much (one request is ~1 ms on a LAN).
    follow_interval_max_s: float = Field(default=0.05, gt=0, le=60)
    #: Get-Printer-Attributes (the probe) gets this long to answer: a printer that does not
    #: is *shown* as not answering at once (``reachable: false``); it is given no new work
    #: after ``failure_threshold`` such probes, and a job it holds moves only after
    #: ``in_hand_timeout_s`` (DESIGN §4). A printer busy printing still answers it in
    #: milliseconds on a LAN; raise it for one that is slower to describe itself. A
    #: ``request_timeout_s`` below it bounds the probe too.
    probe_timeout_s: float = Field(default=2.0, gt=0, le=300)
    #: An idle printer is probed this often: with ``probe_timeout_s`` it bounds how long a
    #: printer that stopped answering is still shown as answering (0.75 + 2 < 3 s).
    idle_probe_interval_s: float = Field(default=0.75, gt=0, le=3600)
    unreachable_retry_max_s: float = Field(default=5.0, gt=0, le=600)
    busy_backoff_s: float = Field(default=0.25, ge=0, le=60)
    max_attempts: int = Field(default=5, ge=1, le=100)
    retry_base_s: float = Field(default=2.0, ge=0, le=3600)
    retry_max_s: float = Field(default=120.0, ge=0, le=86400)
    #: What to do when a printer forgot a job that may have printed (DESIGN §3).
    on_unknown_outcome: Literal["dead", "reprint"] = "dead"
    # health (DESIGN §4)
    failure_threshold: int = Field(default=3, ge=1, le=100)
    stopped_grace_s: float = Field(default=10.0, ge=0, le=3600)
    quarantine_after: int = Field(default=3, ge=2, le=100)
    quarantine_s: float = Field(default=60.0, ge=0, le=86400)
    #: A printer unreachable this long with a job in hand: the job is moved (no document
    #: sent) or, when the printer may have printed it, parked DEAD outcome_unknown.
    in_hand_timeout_s: float = Field(default=30.0, ge=0, le=86400)
    #: A printer that answers but cannot go on with the job in hand (a jam, an open door,
    #: no paper in any tray) this long: its copy is cancelled there and, once the printer
    #: accepted the cancel with nothing of it out, the job moves to a peer (DESIGN §4).
    blocked_grace_s: float = Field(default=5.0, ge=0, le=86400)
    #: How far a page's size may be from its stock's and still be that size (millimetres).
    media_tolerance_mm: float = Field(default=2.0, ge=0, le=20)
    #: Retry-After of a 503 when a printer's or pool's queue is full.
    retry_after_s: int = Field(default=5, ge=1, le=3600)
    #: Processes that render PDF pages to raster for printers without PDF (started on first
    #: use). With 2 or more, a long document never takes the last one: a badge does not wait.
    render_workers: int = Field(default=2, ge=1, le=16)
    #: Rendered rasters kept under data_dir/renditions, at most this many bytes (LRU).
    rendition_cache_bytes: int = Field(default=256 * 1024 * 1024, ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> DispatchConfig:
        if self.poll_interval_min_s > self.poll_interval_max_s:
            raise ValueError(
                "dispatch.poll_interval_min_s: must not exceed dispatch.poll_interval_max_s"
            )
        if self.poll_interval_min_s > self.follow_interval_max_s:
            raise ValueError(
                "dispatch.poll_interval_min_s: must not exceed dispatch.follow_interval_max_s"
            )
        if self.retry_base_s > self.retry_max_s:
            raise ValueError("dispatch.retry_base_s: must not exceed dispatch.retry_max_s")
        if self.request_timeout_s > self.upload_timeout_s:
            raise ValueError(
                "dispatch.request_timeout_s: must not exceed dispatch.upload_timeout_s "
                "(an upload is a request with a document)"
            )
        return self


def _hostname() -> str:
    return socket.gethostname()[:64] or "edgeprint"


class ClusterConfig(_Frozen):
    """``[cluster]``: printer ownership when several appliances share a PostgreSQL store.

    Each printer is driven by the appliance holding its lease (DESIGN §10). An owner
    renews its leases every ``heartbeat_s`` and stops sending ``margin_s`` before its
    lease could have expired; a taker waits ``lease_s + margin_s`` without seeing a
    renewal. Ignored with the embedded SQLite file (one appliance owns every printer).
    """

    #: This appliance's name in the lease table (unique per appliance on one database).
    appliance_id: str = Field(default_factory=_hostname, min_length=1, max_length=64)
    lease_s: float = Field(default=3.0, ge=0.3, le=300)
    heartbeat_s: float = Field(default=1.0, gt=0, le=100)
    #: The safety margin for clock-rate drift and scheduling delays on either side.
    margin_s: float = Field(default=0.5, gt=0, le=60)

    @model_validator(mode="after")
    def _heartbeat_well_inside_lease(self) -> ClusterConfig:
        if self.heartbeat_s * 3 > self.lease_s:
            raise ValueError(
                f"cluster.heartbeat_s: {self.heartbeat_s} s is not comfortably shorter than "
                f"cluster.lease_s ({self.lease_s} s): it must be at most lease_s / 3, so that "
                "two renewals may be lost before an owner's lease runs out"
            )
        if self.margin_s >= self.lease_s - self.heartbeat_s:
            raise ValueError(
                f"cluster.margin_s: {self.margin_s} s must be shorter than cluster.lease_s "
                f"- cluster.heartbeat_s ({self.lease_s - self.heartbeat_s} s), or an owner "
                "would stop sending between two of its own renewals"
            )
        return self


class RetentionConfig(_Frozen):
    """``[retention]``: how long held jobs and finished documents are kept (seconds)."""

    hold_ttl_s: float = Field(default=86_400.0, gt=0)
    document_retention_s: float = Field(default=7 * 86_400.0, ge=0)
    interval_s: float = Field(default=60.0, gt=0, le=86_400)
    #: How long the audit trail keeps a row (issue 26): 90 days.
    audit_s: float = Field(default=90 * 86_400.0, gt=0)


class PrinterConfig(_Frozen):
    """One ``[[printers]]`` entry: an IPP printer edgeprint drives directly."""

    name: Name
    uri: str = Field(pattern=r"^(ipps?|https?)://[^\s/]+(:\d+)?(/\S*)?$")
    pool: Name | None = None
    max_inflight: int = Field(default=1, ge=1, le=16)
    #: Waiting (RELEASED) jobs for this printer before new ones go to a peer or get 503.
    high_water: int = Field(default=50, ge=1, le=100_000)
    #: ipps:// only. "pin": trust the certificate on first use and require it from then on
    #: (self-signed factory certificates); "verify": the system CA store and host name.
    tls: Literal["pin", "verify"] = "pin"
    #: ipps:// only: the certificate's SHA-256 pinned up front ("sha256:…", as openssl prints).
    tls_fingerprint: str | None = None
    #: A copy the printer acknowledged whole and reported no error for, then forgot (a
    #: printer that keeps no job history): "printed" — the job is DONE, marked
    #: printed_unverified with what is known (a venue cannot work through a dead-letter
    #: queue of every badge of the day, and the printer did take the whole document
    #: without a word of trouble); "ask" — DEAD outcome_unknown, a person decides.
    on_forgotten: Literal["printed", "ask"] = "printed"
    #: The stock it has ready when it reports none itself: a PWG self-describing media name
    #: ("oe_4x3-label_4x3in") or a list of them; what the printer reports wins when it
    #: reports any.
    media: list[MediaName] = Field(default_factory=list, max_length=16)
    #: How pages meet larger or other stock: "exact" (same size only), "center" (at their
    #: own size on stock at least as large), "scale" (any stock). Unset: "exact" for label
    #: and roll stock, "scale" for sheet stock.
    fit: Literal["exact", "center", "scale"] | None = None
    #: Labels on a full roll (issue 23): edgeprint counts the labels printed since the roll
    #: was changed and forecasts when it runs out (GET /v1/printers ``runway``). Unset: no
    #: count (a sheet printer, or one that reports its own media level).
    labels_per_roll: int | None = Field(default=None, ge=1, le=100_000)

    @field_validator("tls_fingerprint")
    @classmethod
    def _pin(cls, value: str | None) -> str | None:
        if value is None:
            return None
        return tls.parse_fingerprint(value)  # ValueError names the expected form

    @field_validator("media", mode="before")
    @classmethod
    def _one_media(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value

    @field_validator("media")
    @classmethod
    def _sized(cls, value: list[str]) -> list[str]:
        for name in value:
            if media_name_size(name) is None:
                raise ValueError(f"{name} states no size (write e.g. oe_4x3-label_4x3in)")
        return value

    @property
    def secure(self) -> bool:
        """ipps:// or https://: spoken over TLS."""
        return self.uri.startswith(("ipps://", "https://"))


class TokenConfig(_Frozen):
    """One ``[[tokens]]`` entry: only the SHA-256 (hex) of the bearer token is stored.

    A ``station`` (issue 24: a tablet mounted at a printer) may only call the release
    endpoints of the printers and pools in ``printers``, and nothing else. A ``viewer``
    (issue 26: a dashboard screen, an event manager) reads and never acts. ``expires``
    (RFC 3339 with an offset): from then on the token is refused.
    """

    name: str = Field(min_length=1, max_length=80)
    role: Literal["kiosk", "tech", "station", "viewer"]
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    #: station only: the printer and pool names whose release page it may use.
    printers: list[Name] = Field(default_factory=list, max_length=100)
    expires: datetime | None = None

    @field_validator("expires")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.utcoffset() is None:
            raise ValueError(
                f"{value.isoformat()} has no offset: write the zone, e.g. "
                f"{value.isoformat()}Z or {value.isoformat()}+02:00"
            )
        return value

    @model_validator(mode="after")
    def _station_printers(self) -> TokenConfig:
        if self.role == "station" and not self.printers:
            raise ValueError(
                "a station token names the printers or pools it stands at in `printers`, "
                'e.g. printers = ["printer-01"]'
            )
        if self.role != "station" and self.printers:
            raise ValueError(f"only a station token has `printers`, not a {self.role} token")
        return self


#: What a webhook may subscribe to (``[[webhooks]].events``).
WebhookEvent = Literal[
    "job.done", "job.dead", "job.cancelled", "job.expired", "job.waiting", "job.reprinted",
    "printer.unhealthy", "printer.healthy",
]  # fmt: skip
_WEBHOOK_SECRET_BYTES = (24, 64)


class WebhookConfig(_Frozen):
    """One ``[[webhooks]]`` entry: where to POST which events, signed per Standard Webhooks."""

    url: str = Field(max_length=2000)
    events: list[WebhookEvent] = Field(min_length=1)
    #: ``whsec_`` + base64 of 24–64 random bytes (the Standard Webhooks form).
    secret: str = Field(repr=False)
    #: Keep retrying one event this long (from its first attempt), then park it as failed.
    max_delivery_s: float = Field(default=86_400.0, gt=0, le=30 * 86_400)
    #: One attempt (connect, send, answer) at most this long.
    timeout_s: float = Field(default=10.0, gt=0, le=300)
    #: Back-off between attempts: base * 2^n, capped, times a random 0.5–1.
    retry_base_s: float = Field(default=1.0, gt=0, le=3600)
    retry_max_s: float = Field(default=300.0, gt=0, le=86_400)
    #: How often the outbox is read for new events.
    poll_interval_s: float = Field(default=0.5, gt=0, le=60)

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        parts = urllib.parse.urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{value[:80]!r} is not an http:// or https:// URL with a host")
        if any(c.isspace() for c in value):
            raise ValueError("must not contain white space")
        return value

    @field_validator("events")
    @classmethod
    def _distinct(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("an event is listed twice")
        return value

    @field_validator("secret")
    @classmethod
    def _secret(cls, value: str) -> str:
        low, high = _WEBHOOK_SECRET_BYTES
        hint = f'"whsec_" followed by base64 of {low}–{high} random bytes'
        if not value.startswith("whsec_"):
            raise ValueError(f"must be {hint} (Standard Webhooks)")
        try:
            key = base64.b64decode(value[6:], validate=True)
        except ValueError:
            raise ValueError(f"not valid base64 after whsec_; must be {hint}") from None
        if not low <= len(key) <= high:
            raise ValueError(f"{len(key)} bytes after whsec_; must be {hint}")
        return value

    @field_validator("retry_max_s")
    @classmethod
    def _cap_above_base(cls, value: float, info: ValidationInfo) -> float:
        base = info.data.get("retry_base_s")
        if base is not None and value < base:
            raise ValueError(f"must not be less than retry_base_s ({base})")
        return value

    @property
    def key(self) -> bytes:
        """The HMAC key: the bytes the secret encodes."""
        return base64.b64decode(self.secret[6:])


#: Loopback and the private ranges (RFC 1918, RFC 4193 unique local, link-local).
DEFAULT_IPP_NETWORKS = (
    "127.0.0.0/8", "::1/128", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16",
    "169.254.0.0/16", "fc00::/7", "fe80::/10",
)  # fmt: skip


class IppConfig(_Frozen):
    """``[ipp]``: edgeprint as an IPP Everywhere printer (one queue per printer and pool)."""

    enabled: bool = True
    #: Client addresses allowed to use the queues; others get client-error-not-authorized.
    allowed_networks: list[str] = Field(default_factory=lambda: list(DEFAULT_IPP_NETWORKS))
    #: "basic": HTTP Basic auth, user = token name, password = the token (pair with TLS).
    auth: Literal["none", "basic"] = "none"
    #: Printer or pool names whose queue holds jobs unless the client says no-hold.
    hold_queues: list[Name] = Field(default_factory=list)
    #: Advertise the queues with DNS-SD (_ipp._tcp, subtype _print).
    advertise: bool = True

    @field_validator("allowed_networks")
    @classmethod
    def _networks(cls, value: list[str]) -> list[str]:
        for i, net in enumerate(value):
            try:
                ipaddress.ip_network(net, strict=False)
            except ValueError:
                raise ValueError(
                    f"ipp.allowed_networks[{i}]: not a CIDR network: {net!r}"
                ) from None
        return value


#: The smallest and largest badge side ``[event] badge_media`` may state (hundredths of mm).
BADGE_SIDE_HMM = (1000, 120_000)


class EventConfig(_Frozen):
    """``[event]`` (issue 23): the mode the appliance starts in, and the badge's stock."""

    #: "rehearsal": start a rehearsal at the next start (acts only when this value changes
    #: from the one the last start applied: a go-live through the API is not undone by a
    #: restart). "live": end one, likewise.
    mode: Literal["live", "rehearsal"] = "live"
    #: The badge's stock as a PWG self-describing media name (``oe_4x3-label_4x3in``):
    #: what ``edgeprint preflight`` checks each printer's ready media against.
    badge_media: str | None = Field(default=None, min_length=1, max_length=255)

    @field_validator("badge_media")
    @classmethod
    def _badge_media(cls, value: str | None) -> str | None:
        if value is None:
            return None
        size = media_fit.from_media_name(value)
        if size is None:
            raise ValueError(
                f"event.badge_media: {value!r} is not a PWG self-describing media name "
                "(class_name_WxHunit, e.g. oe_4x3-label_4x3in or na_letter_8.5x11in)"
            )
        low, high = BADGE_SIDE_HMM
        if not all(low <= side <= high for side in (size.width_hmm, size.height_hmm)):
            raise ValueError(
                f"event.badge_media: {value!r} states {size.inches()}; each side must be "
                f"{low // 100} to {high // 100} mm"
            )
        return value


class MetricsConfig(_Frozen):
    """``[metrics]`` (issue 26): whether ``/metrics`` needs a bearer token (a viewer's, a
    kiosk's or a tech's), for sites where the scrape crosses a shared network."""

    token_required: bool = False


class Config(_Frozen):
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
