"""``edgeprint preflight``: will every printer get through the morning? (issue 23)

It reads the appliance's own view through its API — GET /v1/event, GET /v1/printers,
and ``POST /v1/printers/{name}/check`` for each printer (one Get-Printer-Attributes
made now, timed, and an ipps printer's certificate against its pin) — then, unless
``--no-print``, prints one test badge on each printer that passed (a job with
``hold`` false, to that printer by name) and times release → printed from the
job's own times. Each printer gets a verdict: a *problem* would fail the morning
(exit 4), a *warning* is worth a look. The badge's size comes from ``--badge FILE``
(a PDF; its first page) or ``[event] badge_media``; with neither, the stock is not
checked and preflight says so.
"""

from __future__ import annotations

import argparse
import io
import json
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from edgeprint import media_fit
from edgeprint.cli import client, render
from edgeprint.cli.errors import ApiFailed, ConnectFailed, UsageError
from edgeprint.printers.testpage import render_test_page

#: Exit code when a printer would fail the morning (README, ``--help``).
EXIT_NOT_READY = 4
#: A printer slower than this to answer Get-Printer-Attributes gets a warning (seconds).
SLOW_ANSWER_S = 1.0
#: A supply at or under this level (percent) is low; at 0 it is out.
LOW_SUPPLY_PERCENT = 10
#: A roll that runs out sooner than this at the current rate gets a warning (minutes).
SHORT_RUNWAY_MIN = 60.0
#: How long a check may take at the appliance (an unreachable printer: its request time-out).
CHECK_TIMEOUT_S = 60.0
#: Printers checked at once.
PARALLEL = 8
_DONE, _FAILED = {"DONE"}, {"DEAD", "CANCELLED", "EXPIRED"}


@dataclass
class Badge:
    """The badge's size and where it came from (``file`` or ``config``)."""

    source: str
    name: str
    width_mm: float
    height_mm: float
    pdf: bytes | None = field(default=None, repr=False)

    @property
    def size(self) -> media_fit.Size:
        return media_fit.Size(round(self.width_mm * 100), round(self.height_mm * 100))

    def json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "name": self.name,
            "width_mm": self.width_mm,
            "height_mm": self.height_mm,
        }


@dataclass
class Verdict:
    """One printer: what was found, what would fail the morning, what is worth a look."""

    name: str
    uri: str
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    reachable: bool = False
    round_trip_s: float | None = None
    printer_state: str | None = None
    printer_state_reasons: list[str] = field(default_factory=list)
    printer_state_message: str = ""
    media_ready: list[str] = field(default_factory=list)
    stock_fit: str | None = None  # exact, sheet or none (media_fit.judge); None: not checked
    supplies: Any = None
    runway: Any = None
    tls: dict[str, Any] | None = None
    test_print: dict[str, Any] | None = None

    @property
    def ready(self) -> bool:
        return not self.problems

    def json(self) -> dict[str, Any]:
        return {"ready": self.ready, **asdict(self)}


def read_badge(path: str) -> Badge:
    """The badge PDF's first page size (pypdf). Raises UsageError for anything else."""
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise UsageError(f"--badge {path}: {exc.strerror or exc}") from None
    if not data.lstrip()[:5] == b"%PDF-":
        raise UsageError(f"--badge {path}: not a PDF (it does not begin with %PDF-)")
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise UsageError(f"--badge {path}: the PDF is encrypted")
        if len(reader.pages) == 0:
            raise UsageError(f"--badge {path}: the PDF has no pages")
        box = reader.pages[0].mediabox
        width_pt, height_pt = float(box.width), float(box.height)
    except UsageError:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UsageError(f"--badge {path}: not a readable PDF: {exc}") from None
    if width_pt <= 0 or height_pt <= 0:
        raise UsageError(f"--badge {path}: the first page has no size")
    size = media_fit.from_points(width_pt, height_pt)
    return Badge("file", Path(path).name, size.width_hmm / 100, size.height_hmm / 100, data)


def run(api: client.Api, args: argparse.Namespace, as_json: bool) -> int:
    """``edgeprint preflight``; returns 0 (every printer ready) or EXIT_NOT_READY."""
    badge = read_badge(args.badge) if args.badge else None
    _, event = api.json("GET", "/v1/event")
    if badge is None and event.get("badge_media"):
        size = media_fit.from_media_name(str(event["badge_media"]))
        if size is not None:
            badge = Badge("config", size.name or "", size.width_hmm / 100, size.height_hmm / 100)
    _, listing = api.json("GET", "/v1/printers")
    printers = listing.get("printers", [])
    checker = client.Api(api.base, api.token, max(api.timeout_s, CHECK_TIMEOUT_S))
    with ThreadPoolExecutor(max_workers=PARALLEL, thread_name_prefix="preflight") as pool:
        checks = list(pool.map(lambda p: _check(checker, p["name"]), printers))
    verdicts = [_judge(p, c, badge) for p, c in zip(printers, checks, strict=True)]
    if not args.no_print:
        _test_prints(api, [v for v in verdicts if v.ready], badge, args.wait)
    notes = _notes(event, badge, args)
    if as_json:
        body = {
            "url": api.base,
            "checked_at": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
            "event": {"mode": event.get("mode"), "since": event.get("since")},
            "badge": None if badge is None else badge.json(),
            "test_print": not args.no_print,
            "ready": all(v.ready for v in verdicts),
            "notes": notes,
            "printers": [v.json() for v in verdicts],
        }
        render.emit_raw(json.dumps(body, indent=2).encode())
    else:
        render.out(_screen(api.base, verdicts, notes))
    return 0 if all(v.ready for v in verdicts) and verdicts else EXIT_NOT_READY


def _check(api: client.Api, name: str) -> dict[str, Any] | str:
    """The check's answer, or why the appliance could not give one."""
    try:
        _, body = api.json("POST", f"/v1/printers/{name}/check")
    except (ApiFailed, ConnectFailed) as exc:
        return str(exc)
    return body if isinstance(body, dict) else "the check's answer is not a JSON object"


def _notes(event: dict[str, Any], badge: Badge | None, args: argparse.Namespace) -> list[str]:
    notes = []
    if badge is None:
        notes.append(
            "stock not checked: no badge size known; pass --badge FILE (the badge PDF) or set "
            "[event] badge_media (e.g. oe_4x3-label_4x3in) in the config"
        )
    else:
        where = f"from {badge.name}" if badge.source == "file" else f"[event] {badge.name}"
        notes.append(f"badge {badge.size.inches()} ({where})")
    if args.no_print:
        notes.append("no test badge printed (--no-print)")
    elif event.get("mode") == "live":
        notes.append(
            "the event is live: the test badges are live jobs and count in the live figures "
            "(run preflight in a rehearsal: edgeprint rehearsal)"
        )
    return notes


def _judge(p: dict[str, Any], check: dict[str, Any] | str, badge: Badge | None) -> Verdict:
    v = Verdict(p["name"], p.get("uri", ""), supplies=p.get("supplies"), runway=p.get("runway"))
    if p.get("paused"):
        v.problems.append(f"paused: it takes no work (edgeprint resume {v.name})")
    if isinstance(check, str):
        v.problems.append(f"could not be checked: {check}")
        return v
    v.reachable = bool(check.get("reachable"))
    v.round_trip_s = check.get("round_trip_s")
    v.printer_state = check.get("printer_state")
    v.printer_state_reasons = [r for r in check.get("printer_state_reasons") or [] if r != "none"]
    v.printer_state_message = str(check.get("printer_state_message") or "")
    v.media_ready = list(check.get("media_ready") or [])
    v.tls = check.get("tls")
    if not v.reachable:
        v.problems.append(f"does not answer: {check.get('error') or 'no answer'}")
        return v
    if check.get("error"):
        v.problems.append(f"answers, but not usably: {check['error']}")
    if v.round_trip_s is not None and v.round_trip_s > SLOW_ANSWER_S:
        v.warnings.append(f"slow to answer: {v.round_trip_s:.2f} s for Get-Printer-Attributes")
    _state(v, check)
    if not p.get("healthy", True) and not v.problems:
        why = p.get("problem") or p.get("health_reason") or "unhealthy"  # issue 25: its words
        v.problems.append(f"edgeprint gives it no work: {why}")
    _stock(v, badge, check.get("stock") or p.get("media_ready"))
    _supplies(v)
    _runway(v)
    _tls(v)
    return v


def _state(v: Verdict, check: dict[str, Any]) -> None:
    message = f" ({v.printer_state_message})" if v.printer_state_message else ""
    if v.printer_state == "stopped":
        why = ", ".join(v.printer_state_reasons) or "no reason given"
        v.problems.append(f"stopped: {why}{message}")
    elif check.get("accepting_jobs") is False:
        v.problems.append("not accepting jobs (printer-is-accepting-jobs is false)")
    errors_ = [r for r in v.printer_state_reasons if _severity(r) == "error"]
    warnings_ = [r for r in v.printer_state_reasons if _severity(r) == "warning"]
    if errors_ and v.printer_state != "stopped":
        v.problems.append(f"reports {', '.join(errors_)}{message}")
    if warnings_:
        v.warnings.append(f"reports {', '.join(warnings_)}{message}")


def _severity(reason: str) -> str:
    """RFC 8011 §5.4.12: the suffix; a bare keyword is read as an error."""
    for suffix in ("error", "warning", "report"):
        if reason.endswith(f"-{suffix}"):
            return suffix
    return "error"


def _stock(v: Verdict, badge: Badge | None, routed: object) -> None:
    """The badge against the ready stock, by the routing's own rule: ``routed`` is the stock
    as the routing reads it (the check's ``stock``, else ``media_ready`` in GET
    /v1/printers: each with its size, label or sheet, and fit), else the check's ready media
    are judged by their names."""
    if badge is None:
        return
    if not v.media_ready:
        v.warnings.append(
            "reports no ready media: whether the badge's stock is loaded cannot be told "
            "(look at the printer)"
        )
        return
    ready: list[Any] = routed if isinstance(routed, list) and routed else list(v.media_ready)
    v.stock_fit = media_fit.judge(badge.size, ready)
    if v.stock_fit == "exact":
        return
    if v.stock_fit == "sheet":
        sheet = media_fit.sheet_fitting(badge.size, ready)[0].split(" (")[0]
        v.warnings.append(
            f"no {badge.size.inches()} stock ready: the badge comes out on {sheet}, scaled or "
            "centred (sheet stock)"
        )
        return
    v.stock_fit = "none"
    v.problems.append(
        f"wrong stock: {', '.join(v.media_ready)} ready, not the badge's {badge.size.inches()}"
    )


def _supplies(v: Verdict) -> None:
    """``supplies`` of GET /v1/printers (models.SupplyOut): ``level_percent`` 0–100, null
    when the printer does not say."""
    items = v.supplies if isinstance(v.supplies, list) else []
    for item in items:
        if not isinstance(item, dict):
            continue
        level = item.get("level_percent")
        name = item.get("name") or item.get("kind") or "a supply"
        if not isinstance(level, int | float) or isinstance(level, bool) or level < 0:
            continue
        if level == 0:
            v.problems.append(f"{name} is empty")
        elif level <= LOW_SUPPLY_PERCENT:
            v.warnings.append(f"{name} is low ({level:g}%)")


def _runway(v: Verdict) -> None:
    """``runway`` of GET /v1/printers when the appliance has it (labels left on the roll)."""
    r = v.runway if isinstance(v.runway, dict) else None
    if r is None:
        return
    left, minutes = r.get("labels_left"), r.get("minutes_left")
    if isinstance(left, int) and left <= 0:
        v.problems.append("the roll is used up (runway: 0 labels left)")
    elif isinstance(minutes, int | float) and minutes < SHORT_RUNWAY_MIN:
        v.warnings.append(f"the roll runs out in about {minutes:.0f} min at the current rate")


def _tls(v: Verdict) -> None:
    t = v.tls
    if not isinstance(t, dict) or t.get("mode") != "pin":
        return
    if t.get("error"):
        v.problems.append(f"no TLS session to read its certificate: {t['error']}")
    elif t.get("matches") is False:
        v.problems.append(
            f"presents another certificate ({t.get('presented')}) than the pinned one "
            f"({t.get('pinned')}): nothing is sent to it; if the printer was reset, "
            f"edgeprint printers trust {v.name}"
        )
    elif t.get("pinned") is None:
        v.warnings.append("no certificate pinned yet: the one it presents is pinned at first use")


def _test_prints(
    api: client.Api, verdicts: list[Verdict], badge: Badge | None, wait_s: float
) -> None:
    """One test badge per printer (hold false, to the printer by name), then each job
    followed until DONE or a failure, all within ``wait_s``."""
    jobs: dict[str, Verdict] = {}
    for v in verdicts:
        pdf = badge.pdf if badge is not None and badge.pdf is not None else _badge_pdf(v, badge)
        meta = {"owner": "preflight", "printer": v.name, "hold": False}
        try:
            job = api.submit(meta, pdf, f"preflight-{v.name}-{uuid.uuid4().hex[:16]}")
        except (ApiFailed, ConnectFailed) as exc:
            v.problems.append(f"the test badge was refused: {exc}")
            continue
        jobs[job["id"]] = v
        v.test_print = {"job_id": job["id"], "state": job["state"], "release_to_printed_s": None}
    deadline = time.monotonic() + wait_s
    pending = set(jobs)
    while pending and time.monotonic() < deadline:
        for job_id in sorted(pending):
            try:
                _, job = api.json("GET", f"/v1/jobs/{job_id}")
            except (ApiFailed, ConnectFailed):
                continue
            v = jobs[job_id]
            assert v.test_print is not None
            v.test_print["state"] = job["state"]
            if job["state"] in _DONE | _FAILED:
                pending.discard(job_id)
                _settled(v, job)
        if pending:
            time.sleep(0.2)  # polling the appliance, bounded by the deadline
    for job_id in sorted(pending):
        v = jobs[job_id]
        with _quiet():
            api.call("POST", f"/v1/jobs/{job_id}/cancel")
        v.problems.append(
            f"the test badge did not print within {wait_s:g} s (it was "
            f"{v.test_print['state'] if v.test_print else '?'}; cancelled)"
        )


def _settled(v: Verdict, job: dict[str, Any]) -> None:
    assert v.test_print is not None
    if job["state"] in _DONE:
        released, finished = job.get("released_at"), job.get("finished_at")
        if released and finished:
            took = datetime.fromisoformat(finished) - datetime.fromisoformat(released)
            v.test_print["release_to_printed_s"] = round(took.total_seconds(), 3)
        return
    why = job.get("last_error") or job.get("dead_reason") or "no reason given"
    v.problems.append(f"the test badge did not print: {job['state']}: {why}")


def _badge_pdf(v: Verdict, badge: Badge | None) -> bytes:
    """A test badge of the badge's size (else A6-ish) naming the printer."""
    size = (297, 420)
    if badge is not None:
        size = (round(badge.width_mm * 72 / 25.4), round(badge.height_mm * 72 / 25.4))
    return render_test_page(v.name, "preflight", time.time(), size, "edgeprint preflight")


class _quiet:
    """Ignore what the appliance answers (a cancel of a job that finished meanwhile)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, exc: object, tb: object) -> bool:
        return isinstance(exc, ApiFailed | ConnectFailed)


def _screen(base: str, verdicts: list[Verdict], notes: list[str]) -> list[str]:
    now = datetime.now(UTC)
    lines = [f"edgeprint preflight at {base}  {now:%Y-%m-%d %H:%M:%S} UTC"]
    lines += [line for note in notes for line in render.wrap(note, "", "  ")]
    for v in verdicts:
        lines += ["", f"{v.name}  {'ready' if v.ready else 'WOULD FAIL'}  {v.uri}"]
        for problem in v.problems:
            lines += render.wrap(f"FAIL {problem}")
        for warning in v.warnings:
            lines += render.wrap(f"warn {warning}")
        facts = _facts(v)
        if facts:
            lines += render.wrap(facts)
    if not verdicts:
        lines += ["", "no printers configured"]
    bad = [v.name for v in verdicts if not v.ready]
    lines.append("")
    lines += render.wrap(
        f"{len(verdicts) - len(bad)} of {len(verdicts)} printer(s) ready"
        + (f"; would fail the morning: {', '.join(bad)}" if bad else ""),
        "",
        "  ",
    )
    return lines


def _facts(v: Verdict) -> str:
    facts = []
    if v.round_trip_s is not None:
        facts.append(f"answers in {v.round_trip_s * 1000:.0f} ms")
    if v.printer_state:
        facts.append(v.printer_state)
    if v.media_ready:
        fit = {"exact": " (fits)", "sheet": " (larger sheets)", "none": " (wrong stock)"}.get(
            v.stock_fit or "", ""
        )
        facts.append(f"stock ready: {', '.join(v.media_ready)}{fit}")
    if v.tls and v.tls.get("matches"):
        facts.append("certificate matches its pin")
    tp = v.test_print
    if tp and tp.get("release_to_printed_s") is not None:
        facts.append(f"test badge printed, release → printed {tp['release_to_printed_s']:.2f} s")
    return "; ".join(facts)
