"""``edgeprint printers sticker NAME [--out FILE] [--print] [--base URL]`` (issue 24).

The appliance makes the sticker (``GET /v1/printers/{name}/sticker.pdf``): it knows
the printer's stock and its own address. Without ``--base`` the QR code points at the
address this command reached the appliance at (``--url``), unless that is loopback;
then the appliance's own interface address. When that too is loopback the appliance
refuses (a QR code of 127.0.0.1 leads nowhere) and this command exits 1 saying so,
with the hint ``--base http://<box address>:<port>``.
``--print`` submits it to that printer through edgeprint as a job released at once.
"""

from __future__ import annotations

import argparse
import json
import secrets
from pathlib import Path

from edgeprint.cli import client, render
from edgeprint.cli.errors import ApiFailed, UsageError

#: The owner of a sticker printed with ``--print`` (in the job list and its events).
OWNER = "edgeprint-sticker"


def cmd_sticker(api: client.Api, args: argparse.Namespace, as_json: bool) -> None:
    """Fetch the sticker; write it to ``--out`` (default sticker-NAME.pdf unless only
    ``--print``); with ``--print``, send it to the printer."""
    name = args.printer
    query = {"base": args.base} if args.base else None
    try:
        pdf = api.call("GET", f"/v1/printers/{name}/sticker.pdf", query)
    except ApiFailed as exc:
        if b"sticker-base-loopback" not in exc.body:
            raise
        raise ApiFailed(
            exc.status,
            f"{exc}; give the address phones reach the appliance at: "
            "--base http://<box address>:<port>",
            exc.body,
        ) from None
    if not pdf.startswith(b"%PDF-"):
        raise UsageError(f"the answer from {api.base} is not a PDF: is this an edgeprint?")
    lines: list[str] = []
    out = args.out or (None if args.print else f"sticker-{name}.pdf")
    if out is not None:
        try:
            Path(out).write_bytes(pdf)
        except OSError as exc:
            raise UsageError(f"cannot write {out}: {exc.strerror or exc}") from None
        lines.append(f"sticker for {name} written to {out} ({len(pdf)} bytes)")
    job = None
    if args.print:
        # One key per run: a sticker printed again later is a new job, on purpose.
        key = f"sticker-{name}-{secrets.token_hex(8)}"
        job = api.submit({"owner": OWNER, "printer": name, "hold": False}, pdf, key)
        lines.append(f"sticker sent to {name}: job {job['id']} ({job['state']})")
    if as_json:
        render.emit_raw(json.dumps({"printer": name, "out": out, "job": job}).encode())
        return
    render.out(lines)
