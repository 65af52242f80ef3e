"""``edgeprint release JOB_ID [--printer P | --pool Q] [--pin PIN]``: a technician releases
one HELD job without curl (issue 25); ``--filter``/``--ids`` release many (cli/bulk.py).

The call is ``POST /v1/jobs/{id}/release`` with the body the API takes (``printer`` or
``pool``, ``pin``). A job that is not HELD is the API's 409, an unknown id its 404: their
words are printed and the exit code is 1 (cli/tech.py).
"""

from __future__ import annotations

import argparse
from typing import Any

from edgeprint.cli import bulk, client, render


def body(args: argparse.Namespace) -> dict[str, Any] | None:
    """The release body: the target given (replacing the job's) and the PIN (None: empty)."""
    out = {
        key: value
        for key, value in (
            ("printer", getattr(args, "to_printer", None)),
            ("pool", getattr(args, "to_pool", None)),
            ("pin", getattr(args, "pin", None)),
        )
        if value is not None
    }
    return out or None


def cmd_release(api: client.Api, args: argparse.Namespace, as_json: bool) -> int | None:
    """One job by id, or many with ``--filter``/``--ids``."""
    if args.job_id is None:
        return bulk.run(api, args, as_json)
    raw, job = api.json("POST", f"/v1/jobs/{args.job_id}/release", json_body=body(args))
    if as_json:
        render.emit_raw(raw)
        return None
    render.out([line(job)])
    return None


def line(job: dict[str, Any]) -> str:
    """``released ID: now RELEASED, for printer printer-02``."""
    if job.get("printer"):
        target = f"for printer {job['printer']}"
    elif job.get("pool"):
        target = f"for pool {job['pool']} (its first free printer)"
    else:
        target = "for its printer"
    return f"released {job.get('id')}: now {job.get('state')}, {target}"
