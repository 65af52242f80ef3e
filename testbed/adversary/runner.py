"""One scenario against real printers (ippeveprinter behind adversary proxies) and a real
appliance process that is SIGKILLed as the scenario says.

The run submits the jobs as a kiosk would (retrying with the same Idempotency-Key until it
gets a 2xx), plays the events (power cycles, other clients' jobs, jams, a person at the
panel), then clears every fault and waits until every accepted job is settled. What it
collects — the jobs as the API shows them, each printer's own log, what each proxy said,
when printers restarted — is what the oracle judges (testbed/adversary/oracle.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from edgeprint import errors
from edgeprint.ipp import codec
from edgeprint.ipp.names import GroupTag, JobState, Operation, Tag
from edgeprint.ipp.values import attr
from testbed.adversary.catalogue import RIGHT_STOCK
from testbed.adversary.generator import POOL, PRINTERS, Scenario
from testbed.adversary.proxy import AdversaryProxy, Knobs, Record
from testbed.config import FAST_DISPATCH, KIOSK_TOKEN, TECH_TOKEN, config_dict, to_toml
from testbed.pdfs import make_pdf
from testbed.proc import ServeProcess
from testbed.rig import Printed, Rig

#: A printer's job-state values (RFC 8011 §5.3.7): not yet finished, and finished.
_LIVE = frozenset(
    {JobState.PENDING, JobState.PENDING_HELD, JobState.PROCESSING, JobState.PROCESSING_STOPPED}
)
_FINISHED = frozenset({JobState.CANCELED, JobState.ABORTED, JobState.COMPLETED})
#: Dispatch settings of an adversary run: the tests' fast ones, with short grace periods.
DISPATCH = {
    **FAST_DISPATCH,
    "in_hand_timeout_s": 1.5,
    "blocked_grace_s": 0.5,
    "stopped_grace_s": 0.5,
    "quarantine_s": 1.0,
    "request_timeout_s": 1.0,
    "upload_timeout_s": 2.0,
}
#: After the timeline, faults are cleared and jobs get this long to settle (seconds).
SETTLE_S = 25.0
#: A job's submission gives up after this long without a 2xx (seconds).
SUBMIT_GIVE_UP_S = 20.0
#: After the jobs settled, what a printer still holds of edgeprint's is settled within this (s).
LEFTOVER_S = 5.0
#: The faults of a scenario are cleared this long after it starts at the earliest (s).
CLEAR_AFTER_S = 2.5
#: A printer is power-cycled only once it has been running this long (seconds).
POWER_CYCLE_AFTER_S = 2.0
TERMINAL = {"DONE", "DEAD", "CANCELLED", "EXPIRED"}


@dataclass
class RunOutcome:
    """What one run left behind, for the oracle."""

    scenario: Scenario
    accepted: dict[int, str] = field(default_factory=dict)  # job index → edgeprint job id
    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)  # id → the job's JSON
    paper: dict[str, list[Printed]] = field(default_factory=dict)  # printer → its log
    records: dict[str, Record] = field(default_factory=dict)  # printer → what its proxy said
    restarts: dict[str, list[float]] = field(default_factory=dict)  # printer → wall times
    leftovers: dict[str, list[str]] = field(default_factory=dict)  # printer → live empty jobs
    printers: dict[str, dict[str, Any]] = field(default_factory=dict)  # GET /v1/printers
    kills: int = 0
    seconds: float = 0.0
    booted: dict[str, float] = field(default_factory=dict)  # printer → monotonic start
    errors: list[str] = field(default_factory=list)  # the run itself went wrong
    log: Path | None = None  # the appliance's log (JSON lines, every start appended)


class _Appliance:
    """The appliance child process, restarted after each kill (armed or not)."""

    def __init__(self, root: Path, config: Path) -> None:
        self.root = root
        self.config = config
        self.proc: ServeProcess | None = None
        self.url = ""
        self.kills = 0
        self.lock = asyncio.Lock()  # one (re)start at a time

    def start(self, crash: str | None = None) -> None:
        env = {"EDGEPRINT_CRASH_AT": crash} if crash else {}
        self.proc = ServeProcess(self.config, self.root / "serve.log", env=env).start()
        self.url = self.proc.url

    async def restart(self, crash: str | None = None, *, kill: bool = True) -> None:
        """SIGKILL (unless it already died) and start again, ``crash`` armed."""
        async with self.lock:
            if kill:
                self.kill()
            elif self.alive():
                return
            else:
                self.kills += 1  # it died at its crash point
            await asyncio.to_thread(self.start, crash)

    def alive(self) -> bool:
        return (
            self.proc is not None and self.proc.proc is not None and self.proc.proc.poll() is None
        )

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.kills += 1

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()


def owner(i: int) -> str:
    """The owner of a run's job ``i`` (a fault names its job by it)."""
    return f"ann{i:02d}"


async def _submit(app: _Appliance, http: aiohttp.ClientSession, key: str, meta: dict[str, Any],
                  doc: bytes) -> str | None:  # fmt: skip
    """POST /v1/jobs until a 2xx (the same key each time); the job id, or None (gave up)."""
    deadline = time.monotonic() + SUBMIT_GIVE_UP_S
    while time.monotonic() < deadline:
        form = aiohttp.FormData()
        form.add_field("metadata", json.dumps(meta), content_type="application/json")
        form.add_field("document", doc, content_type="application/pdf", filename="badge.pdf")
        headers = {"Authorization": f"Bearer {KIOSK_TOKEN}", "Idempotency-Key": key}
        try:
            async with http.post(f"{app.url}/v1/jobs", data=form, headers=headers) as r:
                body = await r.json(content_type=None)
                if r.status in (200, 201):
                    return str(body["id"])
        except (aiohttp.ClientError, OSError, TimeoutError, ValueError):
            pass
        await asyncio.sleep(0.05)  # the appliance is restarting: the kiosk retries
    return None


async def _jobs(app: _Appliance, http: aiohttp.ClientSession, ids: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    headers = {"Authorization": f"Bearer {KIOSK_TOKEN}"}
    for i in ids:
        with contextlib.suppress(aiohttp.ClientError, OSError, TimeoutError, ValueError):
            async with http.get(f"{app.url}/v1/jobs/{i}", headers=headers) as r:
                if r.status == 200:
                    out[i] = await r.json()
    return out


async def _printers(app: _Appliance, http: aiohttp.ClientSession) -> dict[str, dict[str, Any]]:
    """GET /v1/printers by name ({} when the appliance does not answer)."""
    with contextlib.suppress(aiohttp.ClientError, OSError, TimeoutError, ValueError, KeyError):
        headers = {"Authorization": f"Bearer {TECH_TOKEN}"}
        async with http.get(f"{app.url}/v1/printers", headers=headers) as r:
            return {p["name"]: p for p in (await r.json())["printers"]}
    return {}


async def _ipp(uri: str, msg: codec.IppMessage) -> codec.IppMessage:
    url = uri.replace("ipp://", "http://")
    async with (
        aiohttp.ClientSession() as s,
        s.post(url, data=msg.encode(), headers={"Content-Type": "application/ipp"}) as r,
    ):
        return codec.parse(await r.read())


async def _printer_jobs(uri: str) -> list[dict[str, Any]]:
    """Every job the real printer lists (straight to it, not through the proxy)."""
    msg = codec.request(
        Operation.GET_JOBS, 1, printer_uri=uri,
        attributes=[attr("which-jobs", Tag.KEYWORD, "all"),
                    attr("requested-attributes", Tag.KEYWORD, "job-id", "job-name", "job-state",
                         "job-state-reasons")],
    )  # fmt: skip
    answer = await _ipp(uri, msg)
    out = []
    for g in answer.groups_of(GroupTag.JOB):
        row = {a.name: (a.value if len(a.values) == 1 else [v.value for v in a.values])
               for a in g.attributes}  # fmt: skip
        out.append(row)
    return out


async def _panel_cancel(uri: str, job_id: str) -> None:
    """A person at the printer cancels the job edgeprint made for ``job_id``."""
    for j in await _printer_jobs(uri):
        if job_id in str(j.get("job-name", "")) and j.get("job-state") not in _FINISHED:
            msg = codec.request(
                Operation.CANCEL_JOB, 2, printer_uri=uri,
                attributes=[attr("job-id", Tag.INTEGER, int(j["job-id"])),
                            attr("requesting-user-name", Tag.NAME, "front-desk")],
            )  # fmt: skip
            await _ipp(uri, msg)


async def _foreign_job(uri: str, pages: int, n: int) -> None:
    """Another client prints straight to the printer (it may be busy: then it is not)."""
    doc = make_pdf(f"someone else's document {n}", pages=pages)
    msg = codec.request(
        Operation.PRINT_JOB, 3, printer_uri=uri,
        attributes=[attr("requesting-user-name", Tag.NAME, "guest"),
                    attr("job-name", Tag.NAME, f"report-{n}"),
                    attr("document-format", Tag.MIME_MEDIA_TYPE, "application/pdf")],
        data=doc,
    )  # fmt: skip
    with contextlib.suppress(aiohttp.ClientError, OSError, errors.IppParseError):
        await _ipp(uri, msg)


@contextlib.contextmanager
def _proxies(scn: Scenario, rig: Rig) -> Iterator[dict[str, AdversaryProxy]]:
    started: dict[str, AdversaryProxy] = {}
    try:
        for i, p in enumerate(PRINTERS):
            proxy = AdversaryProxy(
                rig[p].uri, Knobs(**scn.knobs[p]), printer_dir=rig[p].dir,
                seed=scn.seed * 7 + i,
            )  # fmt: skip
            started[p] = proxy.start()
        yield started
    finally:
        for proxy in started.values():
            proxy.stop()


async def run(scn: Scenario, root: Path, rig: Rig, *, min_run_s: float = 0.0) -> RunOutcome:
    """Run ``scn`` in ``root`` on ``rig`` (two printers, started: they are restarted fresh);
    ``min_run_s``: look at the printers at least this long after the start."""
    began = time.monotonic()
    out = RunOutcome(scn, restarts={p: [] for p in PRINTERS}, log=root / "serve.log")
    rig.stop()
    rig.start(len(PRINTERS))
    out.booted = {p: time.monotonic() for p in PRINTERS}
    for p in PRINTERS:
        rig.set_speed(p, scn.speeds[p])
    with _proxies(scn, rig) as proxies:
        cfg = config_dict(root / "data")
        cfg["printers"] = [{"name": p, "uri": proxies[p].uri, "pool": POOL} for p in PRINTERS]
        cfg["dispatch"] = dict(DISPATCH)
        path = root / "config.toml"
        path.write_text(to_toml(cfg))
        app = _Appliance(root, path)
        app.start()
        try:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as http:
                guard = asyncio.create_task(_watchdog(app))
                try:
                    t0 = time.monotonic()
                    await _timeline(scn, rig, proxies, app, http, out, t0)
                    await _settle(scn, rig, proxies, app, http, out, t0, min_run_s)
                finally:
                    guard.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await guard
        finally:
            app.stop()
        out.kills = app.kills
        for p in PRINTERS:
            out.records[p] = proxies[p].record
    for p in PRINTERS:
        out.paper[p] = rig.printed(p)
    out.seconds = time.monotonic() - began
    return out


async def _timeline(
    scn: Scenario, rig: Rig, proxies: dict[str, AdversaryProxy], app: _Appliance,
    http: aiohttp.ClientSession, out: RunOutcome, t0: float,
) -> None:  # fmt: skip
    booted = dict(out.booted)
    docs = [make_pdf(f"seed {scn.seed} job {i}", pages=j.pages, pad_to=3000)
            for i, j in enumerate(scn.jobs)]  # fmt: skip

    answered = {i: asyncio.Event() for i in range(len(scn.jobs))}

    async def submit(i: int) -> None:
        j = scn.jobs[i]
        await asyncio.sleep(max(0.0, t0 + j.at - time.monotonic()))  # its instant in the run
        meta: dict[str, Any] = {"owner": owner(i), "hold": False, "copies": j.copies}
        meta.update({"printer": j.printer} if j.printer else {"pool": POOL})
        job_id = await _submit(app, http, f"adv-{scn.seed}-{i:02d}", meta, docs[i])
        if job_id is not None:
            out.accepted[i] = job_id
        else:
            out.errors.append(f"job {i} got no 2xx in {SUBMIT_GIVE_UP_S} s")
        answered[i].set()

    async def job_id(i: int) -> str | None:
        await answered[i].wait()
        return out.accepted.get(i)

    async def event(at: float, action: str, args: dict[str, Any]) -> None:
        await asyncio.sleep(max(0.0, t0 + at - time.monotonic()))  # its instant in the run
        p = args["printer"]
        if action == "fault":
            fault(args)
        elif action == "clear_fault":
            rig.clear_fault(p)
        elif action == "panel_cancel":
            jid = await job_id(args["job"])
            # nobody cancels at the panel of a printer that is off (or goes off meanwhile)
            if jid is not None and rig.state(p) == "running":
                with contextlib.suppress(aiohttp.ClientError, OSError, TimeoutError):
                    await _panel_cancel(rig[p].uri, jid)
        elif action == "media":
            if rig.state(p) == "running":
                await asyncio.to_thread(rig.media, p, args["level"])
        elif action == "stock":
            # a person swaps the roll: media-ready changes, printer-config-change-time
            # does not (ippeveprinter's /media form leaves it, as many printers do)
            if rig.state(p) == "running":
                await asyncio.to_thread(rig.load_media, p, args["size"], args["media_type"])
        elif action in ("hang", "resume"):
            if rig.state(p) != "dead":  # a printer that is off cannot hang (or be resumed)
                getattr(rig, action)(p)
        elif action == "power_cycle":
            # a printer that has been running loses power: one that restarts within a second
            # of booting cannot show it in a printer-up-time counting whole seconds
            await asyncio.sleep(max(0.0, booted[p] + POWER_CYCLE_AFTER_S - time.monotonic()))
            rig.kill(p)
            out.restarts[p].append(time.time())
            # the proxy knows the new life before the printer answers again: an answer of
            # the new printer must never carry the old life's traits (its printer-uuid)
            proxies[p].restarted()
            await asyncio.sleep(args["down_s"])  # the printer is off this long
            await asyncio.to_thread(rig.restart, p)
            booted[p] = time.monotonic()
        elif action == "foreign_job":
            await _foreign_job(
                rig[p].uri, args["pages"], len(out.restarts[p]) * 10 + int(at * 1000)
            )
        elif action == "knob":
            for k, v in args.items():
                if k != "printer":
                    setattr(proxies[p].knobs, k, v)

    async def kills() -> None:
        for k in scn.kills:
            if k.crash is not None:  # the next start is armed: it dies there by itself
                await app.restart(k.crash)
                continue
            await asyncio.sleep(max(0.0, t0 + k.at - time.monotonic()))  # its instant
            await app.restart()

    def fault(args: dict[str, Any]) -> None:
        """A job fault for the printer, matching the job by its owner (known before it is
        submitted, so the fault is in place before the printer can start it)."""
        rig.fault(args["printer"], args["mode"], *args["args"], user=owner(args["job"]),
                  once=args.get("once", False))  # fmt: skip

    early = [e for e in scn.events if e[1] == "fault" and e[0] <= 0.0]
    for _, _, args in early:
        fault(args)
    tasks = [submit(i) for i in range(len(scn.jobs))]
    tasks += [event(at, a, args) for at, a, args in scn.events if (at, a, args) not in early]
    await asyncio.gather(*tasks, kills())


async def _watchdog(app: _Appliance) -> None:
    """An armed appliance that died at its crash point is started again, unarmed."""
    while True:
        if not app.alive() and not app.lock.locked():
            await app.restart(kill=False)
        await asyncio.sleep(0.05)  # looking for a dead appliance until cancelled


async def _until_settled(
    app: _Appliance, http: aiohttp.ClientSession, out: RunOutcome, deadline: float
) -> bool:
    """Poll the accepted jobs until all are terminal (True) or ``deadline`` (False)."""
    ids = list(out.accepted.values())
    while True:
        out.jobs = await _jobs(app, http, ids)
        if all(out.jobs.get(i, {}).get("state") in TERMINAL for i in ids):
            return True
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(0.05)  # polling the jobs until settled, bounded by the deadline


async def _settle(
    scn: Scenario, rig: Rig, proxies: dict[str, AdversaryProxy], app: _Appliance,
    http: aiohttp.ClientSession, out: RunOutcome, t0: float, min_run_s: float,
) -> None:  # fmt: skip
    # the faults the scenario set stand until its last event (or CLEAR_AFTER_S) has passed
    last = max((at for at, _, _ in scn.events), default=0.0)
    await _until_settled(app, http, out, t0 + max(CLEAR_AFTER_S, last + 0.5))
    for p in PRINTERS:  # whatever the timeline left, a person sets right now
        rig.clear_fault(p)
        if rig.state(p) == "hung":
            rig.resume(p)
        elif rig.state(p) == "dead":
            proxies[p].restarted()  # before it answers again (as at a power cycle)
            await asyncio.to_thread(rig.restart, p)
            out.restarts[p].append(time.time())
        proxies[p].knobs.extra_reasons = ()
        proxies[p].knobs.head_open = False  # the head is closed
    if any(a == "media" for _, a, _ in scn.events):
        for p in PRINTERS:
            await asyncio.to_thread(rig.media, p, "loaded")
    for p in sorted({args["printer"] for _, a, args in scn.events if a == "stock"}):
        # the roll the badges need is loaded (also where a power cut undid the last swap)
        await asyncio.to_thread(rig.load_media, p, RIGHT_STOCK[0], RIGHT_STOCK[1])
    await _until_settled(app, http, out, time.monotonic() + SETTLE_S)
    restarted = [p for p in PRINTERS if out.restarts[p]]
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:  # the appliance sees the printers as they are now
        printers = await _printers(app, http)
        seen = all((printers.get(p, {}).get("epoch") or 0) > 1 for p in restarted)
        if seen and all(printers.get(p, {}).get("healthy") for p in PRINTERS):
            break
        await asyncio.sleep(0.05)  # polling the printers' view, bounded by the deadline
    await asyncio.sleep(max(0.0, t0 + min_run_s - time.monotonic()))  # a longer look
    out.printers = await _printers(app, http)
    deadline = time.monotonic() + LEFTOVER_S
    while True:  # edgeprint settles (cancels) what its printers still hold of its jobs
        for p in PRINTERS:
            out.leftovers[p] = [
                str(j.get("job-name"))
                for j in await _printer_jobs(rig[p].uri)
                if j.get("job-state") in _LIVE
                and str(j.get("job-name", "")).startswith("edgeprint-")
            ]
        if not any(out.leftovers.values()) or time.monotonic() >= deadline:
            break
        await asyncio.sleep(0.05)  # polling the printers' own lists, bounded by the deadline
