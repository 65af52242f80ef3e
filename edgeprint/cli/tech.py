"""The technicians' commands (DESIGN §8): each asks the appliance's API, then prints a
screen (or, with ``--json``, the API's JSON as-is, for scripts).

Job counts come from ``GET /v1/stats``, never from ``/metrics``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from edgeprint.cli import (
    audit,
    bulk,
    client,
    desk,
    event,
    preflight,
    release,
    render,
    short_ids,
    sticker,
    tokens,
)
from edgeprint.cli.errors import (
    EXIT_API_ERROR,
    EXIT_CONNECT,
    EXIT_OK,
    EXIT_USAGE,
    ApiFailed,
    ConnectFailed,
    UsageError,
)
from edgeprint.states import JobState

#: Dead jobs shown by ``status`` (the full list: ``edgeprint dead-letter``).
STATUS_DEAD_SHOWN = 5


def run(args: argparse.Namespace) -> int:
    """Run the technician command ``args.command`` against the appliance; returns the exit code."""
    as_json = bool(getattr(args, "json", False))
    try:
        api = client.connect(args)
        short_ids.resolve(api, args)
        code = COMMANDS[args.command](api, args, as_json)
    except UsageError as exc:
        print(f"edgeprint: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ConnectFailed as exc:
        print(f"edgeprint: {exc}", file=sys.stderr)
        return EXIT_CONNECT
    except ApiFailed as exc:
        if as_json and exc.body:
            render.emit_raw(exc.body)
        print(f"edgeprint: {exc}", file=sys.stderr)
        return EXIT_API_ERROR
    except BrokenPipeError:  # `edgeprint jobs | head`: the reader is gone, not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except KeyboardInterrupt:
        return 130
    return EXIT_OK if code is None else code


def cmd_status(api: client.Api, args: argparse.Namespace, as_json: bool) -> None:
    """``edgeprint status``: one screen."""
    _, printers = api.json("GET", "/v1/printers")
    _, dead = api.json("GET", "/v1/dead-letter", {"limit": str(STATUS_DEAD_SHOWN)})
    counts, counts_error = _job_counts(api)
    if as_json:
        combined = {
            "url": api.base,
            "printers": printers.get("printers", []),
            "pools": printers.get("pools", []),
            "waiting_for_stock": printers.get("waiting_for_stock", []),
            "jobs_by_state": counts,
            "dead_letter": dead,
        }
        render.emit_raw(json.dumps(combined, indent=2).encode())
        return
    now = datetime.now(UTC)
    # local time, as the problems' times are (the box's clock: edgeprint.timefmt.clock_time)
    lines = [f"edgeprint at {api.base}  {now.astimezone():%Y-%m-%d %H:%M:%S %Z}", ""]
    lines += render.printer_table(printers.get("printers", []), short_ids=True)
    lines += ["", *render.pool_table(printers.get("pools", []))]
    waits = render.stock_waits(printers.get("waiting_for_stock", []))
    lines += ["", *waits] if waits else []
    lines.append("")
    if counts is None:
        lines.append(f"JOBS  counts unavailable: {counts_error}")
    else:
        text = "  ".join(f"{s} {counts.get(s, 0)}" for s in (st.value for st in JobState))
        lines += render.wrap(text, "JOBS  ", "      ")
    lines += _rehearsal_line(api)
    n = int(dead.get("count", 0))
    lines.append(f"DEAD LETTER  {n} job(s)" + ("" if n == 0 else "  (edgeprint dead-letter)"))
    for job in dead.get("jobs", [])[:STATUS_DEAD_SHOWN]:
        lines.append(
            f"  {job['id']}  {job.get('dead_reason') or '-'}  "
            f"{job.get('printed_on') or job.get('printer') or job.get('pool') or '-'}  "
            f"{render.ago(job.get('updated_at'), now)} ago"
        )
    if n > STATUS_DEAD_SHOWN:
        lines.append(f"  … and {n - STATUS_DEAD_SHOWN} more")
    render.out(lines)


def _rehearsal_line(api: client.Api) -> list[str]:
    """A line while the event is in rehearsal (the job counts above are live jobs only)."""
    try:
        _, event = api.json("GET", "/v1/event")
    except (ApiFailed, ConnectFailed):
        return []
    if not isinstance(event, dict) or event.get("mode") != "rehearsal":
        return []
    made = sum(int(n) for n in (event.get("rehearsal_jobs_by_state") or {}).values())
    return render.wrap(
        f"REHEARSAL since {event.get('since')}: {made} test job(s), counted apart; "
        "edgeprint go-live ends it",
        "",
        "  ",
    )


def _job_counts(api: client.Api) -> tuple[dict[str, int] | None, str]:
    """Jobs by state from ``GET /v1/stats``, or None and why not."""
    try:
        _, body = api.json("GET", "/v1/stats")
    except (ApiFailed, ConnectFailed) as exc:
        return None, str(exc)
    counts = body.get("jobs_by_state") if isinstance(body, dict) else None
    if not isinstance(counts, dict) or not counts:
        return None, "/v1/stats has no jobs_by_state"
    return {str(k): int(v) for k, v in counts.items()}, ""


def cmd_printers(api: client.Api, args: argparse.Namespace, as_json: bool) -> None:
    """``edgeprint printers``: every printer in full, then the pools.

    ``edgeprint printers trust PRINTER``: re-trust an ipps printer's certificate;
    ``edgeprint printers sticker PRINTER``: its sticker (edgeprint.cli.sticker).
    """
    if getattr(args, "action", None) == "trust":
        if not args.printer:
            raise UsageError("printers trust: name the printer: edgeprint printers trust PRINTER")
        _printer_action("trust")(api, args, as_json)
        return
    if getattr(args, "action", None) == "sticker":
        sticker.cmd_sticker(api, args, as_json)
        return
    raw, body = api.json("GET", "/v1/printers")
    if as_json:
        render.emit_raw(raw)
        return
    lines: list[str] = []
    for p in render.by_problem(body.get("printers", [])):
        fields = [
            ("pool", p.get("pool") or "-"),
            ("health", render.health(p)),
            *_problem_fields(p),
            ("reachable", render.yes(p.get("reachable"))),
            ("paused", render.yes(p.get("paused"))),
            ("printer-state", p.get("printer_state") or "-"),
            ("reasons", ", ".join(render.reasons(p)) or "none"),
            ("message", p.get("printer_state_message") or "-"),
            ("queued in printer", render.num(p.get("queued_job_count"))),
            ("waiting", f"{p.get('waiting', 0)} (oldest {render.age(p.get('oldest_waiting_s'))})"),
            ("printing", p.get("printing_job") or "-"),
            (
                "stock",
                ", ".join(
                    f"{m.get('size')} {'labels' if m.get('label') else 'sheets'} ({m.get('fit')})"
                    + (f" in {m['tray']}" if m.get("tray") else "")
                    for m in p.get("media_ready") or []
                )
                or "not reported",
            ),
        ]
        lines += render.wrap(f"{p['name']}  {p.get('uri', '')}", "", "    ")
        for label, value in fields:
            lines += render.wrap(f"{label + ':':<19}{value}", "  ", " " * 21)
        lines.append("")
    if not body.get("printers"):
        lines += ["no printers configured", ""]
    lines += render.pool_table(body.get("pools", []))
    waits = render.stock_waits(body.get("waiting_for_stock", []))
    lines += ["", *waits] if waits else []
    render.out(lines)


def _problem_fields(p: dict[str, Any]) -> list[tuple[str, str]]:
    """Each problem in words, its evidence underneath (the raw detail, for whoever digs); an
    appliance before issue 25 sends no problems: its raw health reason and last error."""
    if "problems" not in p:
        return [("why", p.get("health_reason") or "-"), ("last error", p.get("last_error") or "-")]
    out: list[tuple[str, str]] = []
    for problem in render.problems(p):
        out.append(("problem", str(problem.get("text", ""))))
        if problem.get("evidence"):
            out.append(("  evidence", str(problem["evidence"])))
    return out or [("problem", "none")]


def cmd_jobs(api: client.Api, args: argparse.Namespace, as_json: bool) -> None:
    """``edgeprint jobs``: a page of jobs, newest first."""
    query = {
        k: v
        for k, v in (
            ("state", args.state),
            ("owner", args.owner),
            ("printer", args.printer),
            ("limit", None if args.limit is None else str(args.limit)),
            ("cursor", args.cursor),
            # issue 24: search
            ("idempotency_key", args.key),
            ("id_prefix", args.id_prefix),
            ("owner_contains", args.owner_contains),
        )
        if v is not None
    }
    raw, body = api.json("GET", "/v1/jobs", query)
    if as_json:
        render.emit_raw(raw)
        return
    now = datetime.now(UTC)
    jobs = body.get("jobs", [])
    rows = [
        [
            j["id"],
            j["state"],
            render.trim(j.get("owner") or "-", 14),
            render.trim(j.get("title") or "-", 16),
            render.trim(j.get("printed_on") or j.get("printer") or j.get("pool") or "-", 14),
            str(j.get("priority", "")),
            str(j.get("attempts", "")),
            render.ago(j.get("updated_at"), now),
        ]
        for j in jobs
    ]
    lines = (
        render.table(
            ["ID", "STATE", "OWNER", "TITLE", "WHERE", "PRI", "ATT", "CHANGED"],
            rows,
            right={5, 6, 7},
        )
        if jobs
        else ["no jobs"]
    )
    if body.get("next_cursor"):
        lines.append(f"more: add --cursor {body['next_cursor']}")
    render.out(lines)


def cmd_dead_letter(api: client.Api, args: argparse.Namespace, as_json: bool) -> None:
    """``edgeprint dead-letter``: DEAD jobs, oldest first, with why."""
    query = {k: v for k, v in (("limit", args.limit), ("cursor", args.cursor)) if v is not None}
    raw, body = api.json("GET", "/v1/dead-letter", {k: str(v) for k, v in query.items()})
    if as_json:
        render.emit_raw(raw)
        return
    now = datetime.now(UTC)
    jobs = body.get("jobs", [])
    lines = [f"dead-letter queue: {body.get('count', len(jobs))} job(s)"]
    if jobs:
        rows = [
            [
                j["id"],
                j.get("dead_reason") or "-",
                render.trim(j.get("printed_on") or j.get("printer") or j.get("pool") or "-", 14),
                str(j.get("attempts", "")),
                render.ago(j.get("updated_at"), now),
            ]
            for j in jobs
        ]
        table = render.table(["ID", "REASON", "WHERE", "ATT", "DEAD FOR"], rows, right={3, 4})
        lines += ["", table[0]]
        for job, line in zip(jobs, table[1:], strict=True):
            lines.append(line)
            extra = f"owner {job.get('owner')}"
            if job.get("last_error"):
                extra += f"; last error: {job['last_error']}"
            lines += render.wrap(extra)
        lines += advice(jobs)
    if body.get("next_cursor"):
        lines.append(f"more: add --cursor {body['next_cursor']}")
    render.out(lines)


def advice(jobs: list[dict[str, Any]]) -> list[str]:
    """What to do, per reason present: an outcome_unknown job may have printed, so it is
    resolved (the RUNBOOK forbids replaying it: a replay could print a second badge); the
    other reasons are replayed."""
    reasons = {j.get("dead_reason") for j in jobs}
    lines: list[str] = []
    if "outcome_unknown" in reasons:
        lines += [
            "",
            "outcome_unknown: it may have printed. Look at the printer's tray, then",
            "  edgeprint resolve JOB_ID --printed      (it came out: DONE)",
            "  edgeprint resolve JOB_ID --not-printed  (it did not: print it once more)",
            "  never replay these: a replay may print a second badge",
        ]
    others = sorted(str(r or "-") for r in reasons - {"outcome_unknown"})
    if others:
        lines += [
            "",
            f"{', '.join(others)}: replay one (once; prints it again): edgeprint replay JOB_ID",
        ]
    return lines


def cmd_replay(api: client.Api, args: argparse.Namespace, as_json: bool) -> int | None:
    """``edgeprint replay JOB_ID``: DEAD → RELEASED (``--filter``/``--ids``: many)."""
    if args.job_id is None:
        return bulk.run(api, args, as_json)
    raw, job = api.json("POST", f"/v1/jobs/{args.job_id}/replay")
    if as_json:
        render.emit_raw(raw)
        return None
    where = job.get("printer") or (f"pool {job['pool']}" if job.get("pool") else "-")
    render.out([f"replayed {job['id']}: now {job['state']}, waiting for {where}"])
    return None


def cmd_cancel(api: client.Api, args: argparse.Namespace, as_json: bool) -> int | None:
    """``edgeprint cancel JOB_ID [--pin PIN]`` (``--filter``/``--ids``: many)."""
    if args.job_id is None:
        return bulk.run(api, args, as_json)
    body = {"pin": args.pin} if args.pin is not None else None
    raw, job = api.json("POST", f"/v1/jobs/{args.job_id}/cancel", json_body=body)
    if as_json:
        render.emit_raw(raw)
        return None
    if job["state"] == "PRINTING":
        render.out([f"cancel of {job['id']} sent to the printer (it was printing)"])
    else:
        render.out([f"cancelled {job['id']}: now {job['state']}"])
    return None


def cmd_stats(api: client.Api, args: argparse.Namespace, as_json: bool) -> None:
    """``edgeprint stats``: jobs by state, dead letters by reason, printers in short."""
    raw, body = api.json("GET", "/v1/stats")
    if as_json:
        render.emit_raw(raw)
        return
    counts = body.get("jobs_by_state", {})
    lines = render.wrap("  ".join(f"{s} {counts.get(s, 0)}" for s in counts), "JOBS  ", "      ")
    reasons = body.get("dead_letters_by_reason", {})
    dead = "  ".join(f"{r} {n}" for r, n in reasons.items()) or "none"
    lines += render.wrap(f"{body.get('dead_letters', 0)} ({dead})", "DEAD  ", "      ")
    rows = [
        [
            p["name"],
            render.trim(p.get("pool") or "-", 12),
            "paused" if p.get("paused") else ("healthy" if p.get("healthy") else "unhealthy"),
            str(p.get("waiting", 0)),
            render.age(p.get("oldest_waiting_s")),
            render.short_id(p.get("printing_job"), True),
        ]
        for p in body.get("printers", [])
    ]
    if rows:
        header = ["PRINTER", "POOL", "HEALTH", "WAITING", "OLDEST", "PRINTING"]
        lines += ["", *render.table(header, rows, right={3, 4})]
    for pool in body.get("pools", []):
        lines.append(
            f"pool {pool['name']}: {pool.get('waiting', 0)} waiting, oldest "
            f"{render.age(pool.get('oldest_waiting_s'))}"
        )
    render.out(lines)


def cmd_identify(api: client.Api, args: argparse.Namespace, as_json: bool) -> None:
    """``edgeprint identify PRINTER [--test-page]``."""
    how = "test-page" if args.test_page else "auto"
    raw, body = api.json("POST", f"/v1/printers/{args.printer}/identify", json_body={"how": how})
    if as_json:
        render.emit_raw(raw)
        return
    if body.get("action") == "identify-printer":
        line = f"{body['printer']}: Identify-Printer sent (it shows, flashes or sounds)"
    else:
        line = f"{body['printer']}: test page sent (printer job-id {body.get('printer_job_id')})"
    render.out([line])


def cmd_resolve(api: client.Api, args: argparse.Namespace, as_json: bool) -> None:
    """``edgeprint resolve JOB_ID --printed|--not-printed``."""
    raw, job = api.json(
        "POST", f"/v1/jobs/{args.job_id}/resolve", json_body={"printed": args.printed}
    )
    if as_json:
        render.emit_raw(raw)
        return
    said = "printed" if args.printed else "not printed"
    render.out([f"resolved {job['id']}: {said}, now {job['state']}"])


def _printer_action(verb: str) -> Callable[[client.Api, argparse.Namespace, bool], None]:
    def action(api: client.Api, args: argparse.Namespace, as_json: bool) -> None:
        raw, body = api.json("POST", f"/v1/printers/{args.printer}/{verb}")
        if as_json:
            render.emit_raw(raw)
            return
        printer = body["printer"] if verb == "drain" else body
        state = "paused" if printer.get("paused") else "not paused (takes work)"
        lines = [
            f"{printer['name']}: {state}; health {render.health(printer)}; "
            f"{printer.get('waiting', 0)} job(s) waiting for it by name"
        ]
        if verb == "drain":
            moved = body.get("moved", [])
            pool = printer.get("pool")
            lines.append(
                f"moved {len(moved)} waiting job(s) to pool {pool}"
                if pool
                else f"moved {len(moved)} waiting job(s)"
            )
            lines += [f"  {m}" for m in moved]
        render.out(lines)

    action.__doc__ = f"``edgeprint {verb} PRINTER``."
    return action


COMMANDS: dict[str, Callable[[client.Api, argparse.Namespace, bool], int | None]] = {
    "status": cmd_status,
    "printers": cmd_printers,
    "jobs": cmd_jobs,
    "dead-letter": cmd_dead_letter,
    "replay": cmd_replay,
    # issue 24 (many jobs at once)
    "release": release.cmd_release,
    "cancel": cmd_cancel,
    "resolve": cmd_resolve,
    "stats": cmd_stats,
    "identify": cmd_identify,
    "pause": _printer_action("pause"),
    "resume": _printer_action("resume"),
    "drain": _printer_action("drain"),
    # issue 23 (preflight)
    "preflight": preflight.run,
    "event": event.cmd_event,
    "rehearsal": event.cmd_rehearsal,
    "go-live": event.cmd_go_live,
    # issue 24 (the badge desk)
    "reprint": desk.cmd_reprint,
    # issue 26: `edgeprint token list` (`token new` runs without the appliance)
    "token": tokens.cmd_token_list,
    # issue 26 (who did what)
    "audit": audit.cmd_audit,
}
