"""``edgeprint rehearsal``, ``edgeprint go-live`` and ``edgeprint event`` (issue 23)."""

from __future__ import annotations

import argparse
from typing import Any

from edgeprint.cli import client, render


def _lines(event: dict[str, Any]) -> list[str]:
    since = event.get("since") or "the store began"
    counts = event.get("rehearsal_jobs_by_state") or {}
    made = "  ".join(f"{s} {n}" for s, n in counts.items() if n) or "none"
    lines = [f"event: {event['mode']} since {since} (set by {event.get('actor')})"]
    lines += render.wrap(f"rehearsal jobs: {made}", "", "  ")
    if event.get("badge_media"):
        lines.append(f"badge stock: {event['badge_media']}")
    return lines


def cmd_event(api: client.Api, args: argparse.Namespace, as_json: bool) -> None:
    """``edgeprint event``: the mode, since when, the rehearsal's jobs."""
    raw, event = api.json("GET", "/v1/event")
    if as_json:
        render.emit_raw(raw)
        return
    render.out(_lines(event))


def cmd_rehearsal(api: client.Api, args: argparse.Namespace, as_json: bool) -> None:
    """``edgeprint rehearsal``: start a rehearsal (POST /v1/event/rehearsal)."""
    raw, event = api.json("POST", "/v1/event/rehearsal")
    if as_json:
        render.emit_raw(raw)
        return
    render.out(
        ["rehearsal started: every new job is a test until edgeprint go-live", *_lines(event)]
    )


def cmd_go_live(api: client.Api, args: argparse.Namespace, as_json: bool) -> None:
    """``edgeprint go-live``: end the rehearsal (POST /v1/event/live)."""
    raw, event = api.json("POST", "/v1/event/live")
    if as_json:
        render.emit_raw(raw)
        return
    cancelled = event.get("cancelled") or []
    lines = [f"live: the rehearsal is over; {len(cancelled)} rehearsal job(s) cancelled"]
    lines += [f"  {job_id}" for job_id in cancelled]
    render.out([*lines, *_lines(event)])
