"""What the appliance deals with: ``[[printers]]``, ``[[tokens]]``, ``[[webhooks]]``, ``[ipp]``,
``[event]``, ``[metrics]``."""

from __future__ import annotations

import base64
import ipaddress
import urllib.parse
from datetime import datetime
from typing import Literal

from pydantic import (
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from edgeprint import media_fit
from edgeprint.config.base import Frozen, MediaName, Name
from edgeprint.printers import tls
from edgeprint.stock import media_name_size


class PrinterConfig(Frozen):
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


class TokenConfig(Frozen):
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
    "job.done",
    "job.dead",
    "job.cancelled",
    "job.expired",
    "job.waiting",
    "job.reprinted",
    "printer.unhealthy",
    "printer.healthy",
]
_WEBHOOK_SECRET_BYTES = (24, 64)


class WebhookConfig(Frozen):
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
    "127.0.0.0/8",
    "::1/128",
    "10.0.0.0/8",
    "172.16.0.0/12",
    "192.168.0.0/16",
    "169.254.0.0/16",
    "fc00::/7",
    "fe80::/10",
)


class IppConfig(Frozen):
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


class EventConfig(Frozen):
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


class MetricsConfig(Frozen):
    """``[metrics]`` (issue 26): whether ``/metrics`` needs a bearer token (a viewer's, a
    kiosk's or a tech's), for sites where the scrape crosses a shared network."""

    token_required: bool = False
