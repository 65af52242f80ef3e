"""``edgeprint token list`` (issue 26): the appliance's tokens, from ``GET /v1/tokens`` (tech).

Names, roles, a station's printers, expiry in words and the last use (when, from which
address) this appliance saw since it started. The API never sends a secret or a digest,
so this screen cannot show one.
"""

from __future__ import annotations

import argparse
from datetime import datetime
from typing import Any

from edgeprint.cli import client, render


def expiry(expires: str | None, expired: bool, now: datetime) -> str:
    """``never``, ``expired``, or ``expires in 3 days`` (hours, minutes when closer)."""
    if expires is None:
        return "never"
    if expired:
        return "expired"
    try:
        left = (datetime.fromisoformat(expires) - now).total_seconds()
    except ValueError:
        return expires
    for unit, size in (("day", 86_400), ("hour", 3600), ("minute", 60)):
        if left >= size:
            n = int(left // size)
            return f"expires in {n} {unit}{'s' if n != 1 else ''}"
    return "expires in less than a minute"


def _last_use(token: dict[str, Any], since: str, now: datetime) -> str:
    used = token.get("last_used")
    if not used:
        return f"not since {since}"
    source = token.get("last_used_from") or "?"
    return f"{render.ago(used, now)} ago from {source}"


def cmd_token_list(api: client.Api, args: argparse.Namespace, as_json: bool) -> None:
    """``edgeprint token list``: a table of the configured tokens."""
    raw, body = api.json("GET", "/v1/tokens")
    if as_json:
        render.emit_raw(raw)
        return
    now = datetime.now().astimezone()
    since = str(body.get("since") or "?")
    tokens: list[dict[str, Any]] = [t for t in body.get("tokens", []) if isinstance(t, dict)]
    rows = [
        [
            str(t.get("name")),
            str(t.get("role")),
            ", ".join(t.get("printers") or []) or "-",
            expiry(t.get("expires"), bool(t.get("expired")), now),
            _last_use(t, since, now),
        ]
        for t in tokens
    ]
    if not rows:
        render.out(["no tokens configured"])
        return
    render.out(render.table(["NAME", "ROLE", "PRINTERS", "EXPIRES", "LAST USE"], rows))
