"""How the appliance runs: ``[server]``, ``[release]``, ``[store]``, ``[dispatch]``,
``[cluster]``, ``[retention]``."""

from __future__ import annotations

import socket
import urllib.parse
from pathlib import Path
from typing import Literal

import limits
from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from edgeprint.config.base import Frozen


class ServerConfig(Frozen):
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


class ReleaseConfig(Frozen):
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


class StoreConfig(Frozen):
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


class DispatchConfig(Frozen):
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


class ClusterConfig(Frozen):
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


class RetentionConfig(Frozen):
    """``[retention]``: how long held jobs and finished documents are kept (seconds)."""

    hold_ttl_s: float = Field(default=86_400.0, gt=0)
    document_retention_s: float = Field(default=7 * 86_400.0, ge=0)
    interval_s: float = Field(default=60.0, gt=0, le=86_400)
    #: How long the audit trail keeps a row (issue 26): 90 days.
    audit_s: float = Field(default=90 * 86_400.0, gt=0)
