"""What a reload (SIGHUP, ``systemctl reload edgeprint``) may change in a running appliance.

Tokens, the per-token rate limit, the per-request limits of ``[server]``, ``[release]``
and the retention ages are read per request or per sweep, so a reload applies them at
once. Printers may be added, changed and removed (Dispatcher.reconfigure, and
JobService.retire for a removed printer's waiting jobs). Every other key is bound when
the appliance starts (the listening socket, the store, the dispatch settings of the
workers): a config that changes one of them is refused as a whole, naming the keys, and
the running config stays (``systemctl restart edgeprint`` applies them; jobs are kept
and reconciled).

TLS (issue 26): every reload reads the certificate and key files again, whether or not the
config changed (a renewed certificate needs only ``systemctl reload edgeprint``), and
``server.cert_file``/``key_file`` may point elsewhere. A good pair is served to new
connections at once; connections in flight keep theirs. A pair that cannot be served is
refused with its reason in the log and the running certificate stays (the rest of the
config still applies). ``server.allow_plain_http`` is read per request. ``server.tls``
itself (plain or TLS listener) changes only at a restart.
"""

from __future__ import annotations

from typing import Any

from edgeprint.config import Config

#: Dotted keys (or whole tables/arrays) a reload applies at once.
LIVE_KEYS = frozenset(
    {
        "tokens",
        "printers",
        "server.rate_limit",
        "server.max_document_bytes",
        "server.max_metadata_bytes",
        "server.max_document_pages",
        "server.max_zpl_labels",
        "server.body_timeout_s",
        "release.max_pin_failures",
        "release.pin_lockout_s",
        "release.public_url",  # read per sticker (issue 24)
        "release.web_upload",  # read per request of /upload (issue 24)
        "release.upload_rate_limit",
        "retention.hold_ttl_s",
        "retention.document_retention_s",
        "event.badge_media",  # read per preflight (issue 23)
        # issue 26: read per request (edgeprint.api.plain_http)
        "server.allow_plain_http",
        # issue 26: the files are read again at every reload (edgeprint.tls_runtime)
        "server.cert_file",
        "server.key_file",
    }
)


def _flat(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flat(value, f"{dotted}."))
        else:
            out[dotted] = value  # lists (printers, tokens) compare as a whole
    return out


def changed_keys(old: Config, new: Config) -> list[str]:
    """Every dotted key whose value differs (``printers`` and ``tokens`` as a whole)."""
    a, b = _flat(old.model_dump(mode="json")), _flat(new.model_dump(mode="json"))
    return sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))


def restart_keys(old: Config, new: Config) -> list[str]:
    """The changed keys a reload cannot apply (empty: the reload may go ahead)."""
    return [k for k in changed_keys(old, new) if k not in LIVE_KEYS]
