"""``edgeprint audit [--since …] [--limit N] [--actor …] [--action …]``: who did what (issue 26)."""

from __future__ import annotations

import argparse
import re

from edgeprint.cli import client, render


def _limit(text: str) -> int:
    if not re.fullmatch(r"[0-9]{1,4}", text) or not 1 <= int(text) <= 1000:
        raise argparse.ArgumentTypeError(f"an integer from 1 to 1000, not {text!r}")
    return int(text)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The audit command's options (the server checks ``--since``: its 422 names it)."""
    p.add_argument("--since", help="RFC 3339 with an offset (2026-12-07T08:00:00+01:00) or unix")
    p.add_argument("--limit", type=_limit, help="1-1000 (default 100)")
    p.add_argument("--actor", help="only this token's name, IPP user or owner")
    p.add_argument("--action", help="only this action: release, cancel, pause, …")
    p.add_argument("--target", help="only this job id, printer, owner or place")


def cmd_audit(api: client.Api, args: argparse.Namespace, as_json: bool) -> None:
    """``edgeprint audit``: GET /v1/audit as a table, newest first."""
    names = ("since", "limit", "actor", "action", "target")
    query = {n: str(getattr(args, n)) for n in names if getattr(args, n) is not None}
    raw, body = api.json("GET", "/v1/audit", query)
    if as_json:
        render.emit_raw(raw)
        return
    entries = body.get("entries", [])
    if not entries:
        render.out(["no audit rows"])
        return
    rows = [
        [
            str(e["at"]),
            render.trim(f"{e['actor']} ({e['actor_kind']})", 28),
            str(e.get("source") or "-"),
            str(e["action"]),
            render.trim(f"{e['target_kind']} {e['target']}", 40),
            str(e["outcome"]),
            render.trim(str(e.get("detail") or ""), 40),
        ]
        for e in entries
    ]
    render.out(render.table(["AT", "WHO", "FROM", "ACTION", "TARGET", "OUTCOME", "DETAIL"], rows))
