"""The badge desk's command (issue 24): ``edgeprint reprint JOB_ID --reason "…"``.

Each run makes one reprint: it sends a new Idempotency-Key (printed, so that a run cut off
before the answer can be repeated with ``--key`` and answer the same reprint, never a
second one).
"""

from __future__ import annotations

import argparse
import json
import uuid

from edgeprint.cli import client, render
from edgeprint.cli.errors import ApiFailed


def cmd_reprint(api: client.Api, args: argparse.Namespace, as_json: bool) -> None:
    """``edgeprint reprint JOB_ID --reason "…" [--key KEY]``: a DONE job printed again."""
    key = args.key or f"reprint-{uuid.uuid4().hex}"
    raw = api.call(
        "POST",
        f"/v1/jobs/{args.job_id}/reprint",
        json_body={"reason": args.reason},
        extra_headers={"Idempotency-Key": key},
    )
    if as_json:
        render.emit_raw(raw)
        return
    try:
        job = json.loads(raw)
    except ValueError:
        raise ApiFailed(200, "the answer to the reprint is not JSON", raw) from None
    where = job.get("printer") or (f"pool {job['pool']}" if job.get("pool") else "-")
    render.out(
        [
            f"reprint of {job['reprint_of']}: job {job['id']}, {job['state']}, for {where}",
            f"owner {job['owner']}, {job['copies']} copy(ies); Idempotency-Key {key}",
            f"(run again with --key {key} to get this same reprint, never a second one)",
        ]
    )
