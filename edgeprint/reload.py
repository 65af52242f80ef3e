"""What a reload (SIGHUP, ``systemctl reload edgeprint``) may change in a running appliance.

Tokens, the per-token rate limit, the per-request limits of ``[server]``, ``[release]``
and the retention ages are read per request or per sweep, so a reload applies them at
once; printers may be added (each gets its worker at once). Every other key is bound
when the appliance starts (the listening socket, the store, the running printer
workers): a config that changes one of them, or removes or changes a printer, is
refused as a whole, naming the keys, and the running config stays (``systemctl
restart edgeprint`` applies them; jobs are kept and reconciled).
"""

from __future__ import annotations

from typing import Any

from edgeprint.config import Config

#: Dotted keys (or whole tables/arrays) a reload applies at once.
LIVE_KEYS = frozenset(
    {
        "tokens",
        "server.rate_limit",
        "server.max_document_bytes",
        "server.max_metadata_bytes",
        "server.max_document_pages",
        "server.body_timeout_s",
        "release.max_pin_failures",
        "release.pin_lockout_s",
        "retention.hold_ttl_s",
        "retention.document_retention_s",
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
    """The changed keys a reload cannot apply (empty: the reload may go ahead); a printer
    removed or changed is named ``printers[NAME]``."""
    out: list[str] = []
    for key in changed_keys(old, new):
        if key == "printers":
            out += _printers_changed(old, new)
        elif key not in LIVE_KEYS:
            out.append(key)
    return sorted(out)


def _printers_changed(old: Config, new: Config) -> list[str]:
    kept = {p.name: p for p in new.printers}
    return [f"printers[{p.name}]" for p in old.printers if kept.get(p.name) != p]
