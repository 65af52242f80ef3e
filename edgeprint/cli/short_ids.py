"""A job id as the status page shows it: its first 8 hex (issue 25 follow-up).

Commands that take one JOB_ID (release, cancel, replay, resolve, reprint) also take a
6–31 hex prefix, resolved with ``GET /v1/jobs?id_prefix=…`` (the API takes 4–32 hex; six
is the shortest that is rarely ambiguous at an event's size). Exactly one match is used,
said in one line on stderr so the full id is on screen; none or several is exit 1 with
what was found, and nothing is acted on.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from edgeprint.cli import client, render
from edgeprint.cli.errors import ApiFailed

#: Ambiguous matches listed (one more is asked for, to know there are more).
SHOWN = 10
FULL_LEN = 32


def resolve(api: client.Api, args: argparse.Namespace) -> None:
    """Replace a short ``args.job_id`` by the one full id it starts; raises ApiFailed
    (exit 1) when no job or several jobs start with it."""
    prefix = getattr(args, "job_id", None)
    if prefix is None or len(prefix) >= FULL_LEN:
        return
    _, body = api.json("GET", "/v1/jobs", {"id_prefix": prefix, "limit": str(SHOWN + 1)})
    jobs: list[dict[str, Any]] = [j for j in body.get("jobs", []) if isinstance(j, dict)]
    if not jobs:
        raise ApiFailed(404, f"no job starts with {prefix}", b"")
    if len(jobs) > 1:
        more = len(jobs) > SHOWN or bool(body.get("next_cursor"))
        count = f"{'more than ' if more else ''}{min(len(jobs), SHOWN)}"
        lines = [f"{count} jobs start with {prefix}: give more of the id"]
        lines += [f"  {j.get('id')}  {j.get('state')}  {_owner(j)}" for j in jobs[:SHOWN]]
        raise ApiFailed(409, "\n".join(lines), b"")
    args.job_id = str(jobs[0]["id"])
    print(f"edgeprint: job {prefix}… = {args.job_id}", file=sys.stderr)


def _owner(job: dict[str, Any]) -> str:
    return render.clean(render.trim(str(job.get("owner") or "-"), 20))
