"""The run of bench.morning_bench: kiosks, faults and the ground truth of one opening morning.

:func:`rush` starts the stand (printers with 4×3 in labels loaded, then the appliance),
lets ``plan.kiosks`` kiosks submit ``plan.badges`` badges at the doors-open arrival times,
drives the faults of ``plan.faults`` meanwhile, waits until every badge is printed (or the
deadline), and returns what happened: per badge when it was asked for and accepted, the
fault windows as they really were, the appliance's CPU and memory over both of its lives,
and the kiosks' retries. :func:`ground` reads the printers' own logs into the figures.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from bench.harness import (
    POOL,
    BenchError,
    Stand,
    Tech,
    edgeprint_id,
    iso_to_unix,
    printed_at,
    printed_count,
    proc_status,
    processing_times,
    read_store,
    tree_cpu_s,
    until,
)
from edgeprint.documents.capabilities import media_from_name
from testbed.config import KIOSK_TOKEN, TECH_TOKEN
from testbed.morning_ideal import (
    IdealPrinter,
    capacity_used,
    ideal_schedule,
    inside,
    percentiles,
    windows_by_printer,
)
from testbed.pdfs import make_badge_pdf

#: The badge stock every printer is loaded with, and the wrong stock of the stock fault.
LABEL = "oe_4x3-label_4x3in"
WRONG_STOCK = "na_index-4x6_4x6in"
#: The badge: 4×3 in (make_badge_pdf), in hundredths of a millimetre.
BADGE_HMM = (10160, 7620)
#: Two sizes within this much of each other (hundredths of a mm) are the same stock.
SIZE_TOLERANCE_HMM = 100
#: A kiosk's waits after a connection error: first, then doubled up to the last.
KIOSK_RETRY_S = (0.25, 2.0)
#: A kiosk honours Retry-After of a 503, at most this long.
KIOSK_RETRY_AFTER_MAX_S = 5.0
REQUEST_TIMEOUT_S = 30.0
HEALTHY_TIMEOUT_S = 60.0
PROGRESS_EVERY_S = 30.0
#: The technician looks at the dead letters this often.
TECH_LOOK_EVERY_S = 1.0


@dataclass(frozen=True)
class Fault:
    """One fault of the morning: ``kind`` at ``at_s`` after doors open, lasting ``for_s``.

    ``roll``: the printer's roll runs out (media-empty), a new one is in ``for_s`` later;
    ``stock``: ``WRONG_STOCK`` is loaded for ``for_s``, then the labels again; ``power``:
    the printer is SIGKILLed and power-cycled ``for_s`` later; ``appliance``: the appliance
    is SIGKILLed and started again at once on the same data folder.
    """

    kind: str
    at_s: float
    for_s: float = 0.0
    printer: str | None = None


@dataclass(frozen=True)
class Plan:
    """What one morning is: badges, printers and their speeds, kiosks, arrivals, faults."""

    badges: int
    kiosks: int
    #: nominal per-badge seconds of printer-01, printer-02, …
    speeds: tuple[float, ...]
    #: the compressed morning: arrivals over span_s, ramp_s to the peak, decay_s after it
    span_s: float
    ramp_s: float
    decay_s: float
    #: real minutes of the morning this run stands for
    real_minutes: float
    faults: tuple[Fault, ...]
    seed: int
    deadline_s: float
    #: seconds after a job goes DEAD outcome_unknown before the technician looks at that
    #: printer's output tray and says whether the badge came out
    tech_reaction_s: float = 10.0

    @property
    def printers(self) -> int:
        return len(self.speeds)

    @property
    def compression(self) -> float:
        return self.real_minutes * 60.0 / self.span_s


@dataclass
class Badge:
    """One badge as its kiosk saw it (unix times)."""

    index: int
    key: str
    arrival: float
    kiosk: int
    first_try: float | None = None
    accepted: float | None = None
    job_id: str | None = None
    tries: int = 0
    replayed: bool = False


@dataclass
class Morning:
    """Everything :func:`rush` saw; :func:`ground` turns it into figures."""

    plan: Plan
    doors_open: float
    badges: list[Badge]
    windows: list[tuple[str, str, float, float]] = field(default_factory=list)
    appliance_cpu_s: float = 0.0
    appliance_peak_rss_mib: float = 0.0
    appliance_down_s: list[float] = field(default_factory=list)
    kiosk_503: int = 0
    kiosk_connection_errors: int = 0
    errors: list[str] = field(default_factory=list)
    #: job id → what the technician found in the tray (True: the badge is there)
    resolved: dict[str, bool] = field(default_factory=dict)
    finished: float = 0.0
    settled: bool = False


class Life:
    """The appliance's CPU seconds and peak RSS, summed over its lives (a SIGKILL ends one)."""

    def __init__(self, stand: Stand) -> None:
        self.stand = stand
        self.cpu_s = 0.0
        self.peak_mib = 0.0

    def sample(self) -> tuple[float, float]:
        pid = self.stand.pid
        with contextlib.suppress(OSError):
            return tree_cpu_s(pid), proc_status(pid).get("VmHWM", 0.0)
        return 0.0, 0.0

    def end(self) -> None:
        """Right before this life ends: add its CPU and peak."""
        cpu, peak = self.sample()
        self.cpu_s += cpu
        self.peak_mib = max(self.peak_mib, peak)


async def kiosk(
    http: aiohttp.ClientSession, url: str, mine: list[Badge], docs: dict[int, bytes], m: Morning
) -> None:
    """One kiosk: each badge at its arrival, retried with the same Idempotency-Key on 503,
    5xx and connection errors until accepted."""
    headers = {"Authorization": f"Bearer {KIOSK_TOKEN}"}
    meta = json.dumps({"owner": "attendee", "pool": POOL, "hold": False})
    rng = random.Random(mine[0].index if mine else 0)
    for b in mine:
        await asyncio.sleep(max(0.0, b.arrival - time.time()))
        b.first_try = time.time()
        pause = KIOSK_RETRY_S[0]
        while True:
            b.tries += 1
            form = aiohttp.FormData()
            form.add_field("metadata", meta, content_type="application/json")
            form.add_field(
                "document", docs[b.index], content_type="application/pdf", filename="badge.pdf"
            )
            try:
                async with http.post(
                    f"{url}/v1/jobs", data=form, headers={**headers, "Idempotency-Key": b.key}
                ) as r:
                    body = await r.read()
                    if r.status in (200, 201):
                        b.accepted = time.time()
                        b.job_id = str((await r.json())["id"])
                        b.replayed = r.status == 200
                        break
                    if r.status < 500:
                        raise BenchError(f"badge {b.key}: HTTP {r.status}: {body[:300]!r}")
                    m.kiosk_503 += r.status == 503
                    retry = r.headers.get("Retry-After", "1")
                    wait = min(KIOSK_RETRY_AFTER_MAX_S, float(retry) if retry.isdigit() else 1.0)
            except (aiohttp.ClientError, OSError, TimeoutError):
                m.kiosk_connection_errors += 1
                wait, pause = pause, min(KIOSK_RETRY_S[1], pause * 2)
            await asyncio.sleep(wait * rng.uniform(0.8, 1.2))


async def faults(stand: Stand, life: Life, m: Morning) -> None:
    """Drive ``m.plan.faults``, each at its own time (they may overlap)."""
    await asyncio.gather(*(fault(stand, life, m, f) for f in m.plan.faults))


async def fault(stand: Stand, life: Life, m: Morning, f: Fault) -> None:
    """One fault at its time; its window as it really was goes into ``m.windows``."""
    rig = stand.rig
    await asyncio.sleep(max(0.0, m.doors_open + f.at_s - time.time()))
    name = f.printer or ""
    t0 = time.time()
    if f.kind == "roll":
        await asyncio.to_thread(rig.load_media, name, LABEL, level=0)  # media-empty
        t0 = time.time()
        await asyncio.sleep(f.for_s)
        await asyncio.to_thread(rig.load_media, name, LABEL)
    elif f.kind == "stock":
        await asyncio.to_thread(rig.load_media, name, WRONG_STOCK)
        t0 = time.time()
        await asyncio.sleep(f.for_s)
        await asyncio.to_thread(rig.load_media, name, LABEL)
    elif f.kind == "power":
        await asyncio.to_thread(rig.kill, name)
        t0 = time.time()
        await asyncio.sleep(f.for_s)
        await asyncio.to_thread(rig.restart, name)  # the label roll stays in
    elif f.kind == "appliance":
        life.end()
        stand.serve.kill()
        t0 = time.time()
        await asyncio.to_thread(stand.serve.start)
        m.appliance_down_s.append(round(time.time() - t0, 2))
    else:
        raise BenchError(f"unknown fault kind {f.kind!r}")
    m.windows.append((f.kind, name, t0, time.time()))
    print(
        f"bench: {f.kind} {name} at +{t0 - m.doors_open:.0f} s, {time.time() - t0:.1f} s",
        file=sys.stderr,
    )


async def technician(http: aiohttp.ClientSession, stand: Stand, m: Morning) -> None:
    """The person at the desk: a job DEAD ``outcome_unknown`` (its printer lost power with
    the badge in hand) is resolved ``tech_reaction_s`` later by looking at that printer's
    output tray — its prints.log, the paper — exactly once per job."""
    headers = {"Authorization": f"Bearer {TECH_TOKEN}"}
    url = stand.url
    while True:
        await asyncio.sleep(TECH_LOOK_EVERY_S)
        try:
            async with http.get(f"{url}/v1/dead-letter?limit=100", headers=headers) as r:
                dead = (await r.json())["jobs"] if r.status == 200 else []
            for job in dead:
                jid = str(job["id"])
                if job["dead_reason"] != "outcome_unknown" or jid in m.resolved:
                    continue
                if time.time() - iso_to_unix(job["finished_at"]) < m.plan.tech_reaction_s:
                    continue
                tray = (
                    {edgeprint_id(x.job_name) for x in stand.rig.printed(job["printed_on"])}
                    if job.get("printed_on") in {p.name for p in stand.rig}
                    else set()
                )
                came_out = jid in tray
                async with http.post(
                    f"{url}/v1/jobs/{jid}/resolve", headers=headers, json={"printed": came_out}
                ) as r:
                    if r.status == 200:
                        m.resolved[jid] = came_out
                        print(
                            f"bench: technician: {jid} {'in' if came_out else 'not in'} "
                            f"the tray of {job['printed_on']}",
                            file=sys.stderr,
                        )
        except (aiohttp.ClientError, OSError, TimeoutError, ValueError, KeyError):
            continue  # the appliance is restarting: look again


async def all_settled(http: aiohttp.ClientSession, stand: Stand, m: Morning) -> bool:
    """Every accepted badge printed, or nothing left to happen: no job RELEASED or
    PRINTING and no dead letter the technician will still resolve."""
    if printed_count(stand.rig) >= sum(1 for b in m.badges if b.job_id):
        return True
    try:
        for state in ("RELEASED", "PRINTING", "RELEASED"):
            async with http.get(
                f"{stand.url}/v1/jobs?state={state}&limit=1",
                headers={"Authorization": f"Bearer {TECH_TOKEN}"},
            ) as r:
                if r.status != 200 or (await r.json())["jobs"]:
                    return False
        async with http.get(
            f"{stand.url}/v1/dead-letter?limit=100",
            headers={"Authorization": f"Bearer {TECH_TOKEN}"},
        ) as r:
            dead = (await r.json())["jobs"]
    except (aiohttp.ClientError, OSError, TimeoutError, ValueError, KeyError):
        return False
    return not [
        j for j in dead if j["dead_reason"] == "outcome_unknown" and str(j["id"]) not in m.resolved
    ]


def load_labels(stand: Stand) -> None:
    """Every printer's trays hold the badge labels (before the appliance first looks)."""
    for p in stand.rig:
        stand.rig.load_media(p.name, LABEL)


async def rush(stand: Stand, plan: Plan, arrivals: list[float]) -> Morning:
    """The morning on a started stand whose appliance is not running yet."""
    load_labels(stand)
    stand.serve.start()
    life = Life(stand)
    docs = {i: make_badge_pdf(f"Attendee {i:05d}") for i in range(plan.badges)}
    async with aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=plan.kiosks + 8),
        timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S),
    ) as http:
        tech = Tech(http, stand.url)
        await until(
            lambda: tech.all_healthy(plan.printers), HEALTHY_TIMEOUT_S, 0.2, "printers not healthy"
        )
        doors = time.time() + 1.0
        badges = [
            Badge(i, f"morning-{plan.seed}-{i:05d}", doors + t, i % plan.kiosks)
            for i, t in enumerate(arrivals)
        ]
        m = Morning(plan, doors, badges)
        lanes = [[b for b in badges if b.kiosk == k] for k in range(plan.kiosks)]
        tasks = [asyncio.create_task(kiosk(http, stand.url, lane, docs, m)) for lane in lanes]
        driver = asyncio.create_task(faults(stand, life, m))
        progress = asyncio.create_task(report_progress(stand, m))
        tech_task = asyncio.create_task(technician(http, stand, m))
        helpers = [driver, progress, tech_task]
        try:
            await asyncio.gather(*tasks, driver)
            left = doors + plan.deadline_s - time.time()
            try:
                await until(
                    lambda: all_settled(http, stand, m),
                    max(1.0, left),
                    0.5,
                    "badges not all printed",
                )
                m.settled = True
            except BenchError as exc:
                m.errors.append(str(exc))
            m.finished = time.time()
        finally:
            for t in [*tasks, *helpers]:
                t.cancel()
            await asyncio.gather(*tasks, *helpers, return_exceptions=True)
    life.end()
    m.appliance_cpu_s, m.appliance_peak_rss_mib = life.cpu_s, life.peak_mib
    return m


async def report_progress(stand: Stand, m: Morning) -> None:
    while True:
        await asyncio.sleep(PROGRESS_EVERY_S)
        asked = sum(1 for b in m.badges if b.first_try is not None)
        accepted = sum(1 for b in m.badges if b.job_id is not None)
        print(
            f"bench: +{time.time() - m.doors_open:.0f} s: {asked} asked, {accepted} "
            f"accepted, {printed_count(stand.rig)} printed",
            file=sys.stderr,
        )


def fits(ready: tuple[str, ...]) -> bool | None:
    """Whether the stock a badge came out on was the badge's (rotation allowed); None when
    the printer did not say."""
    sizes = [m for m in (media_from_name(r) for r in ready) if m is not None]
    if not sizes:
        return None
    w, h = BADGE_HMM
    return any(
        (abs(s.width_hmm - a) <= SIZE_TOLERANCE_HMM and abs(s.height_hmm - b) <= SIZE_TOLERANCE_HMM)
        for s in sizes
        for a, b in ((w, h), (h, w))
    )


def ground(stand: Stand, m: Morning) -> dict[str, Any]:
    """The figures, from the printers' logs (prints.log, media.log, server.log), the
    kiosks' own times and the appliance's store."""
    plan, rig = m.plan, stand.rig
    names = [p.name for p in rig]
    by_job = {b.job_id: b for b in m.badges if b.job_id}
    outs: dict[str, list[tuple[str, float]]] = {}
    wrong: Counter[str] = Counter()
    unknown_stock = 0
    #: (printer, seconds after doors open it came out) of each badge on the wrong stock
    spoiled: list[tuple[str, float]] = []
    for name in names:
        for line in rig.printed(name):
            outs.setdefault(edgeprint_id(line.job_name), []).append((name, printed_at(line)))
        for rec in rig.media_printed(name):
            ok = fits(rec.media_ready)
            if edgeprint_id(rec.job_name) not in by_job:
                continue
            if ok is None:
                unknown_stock += 1
            elif not ok:
                wrong[name] += 1
                spoiled.append((name, round(iso_to_unix(rec.time) - m.doors_open, 2)))
    ours = {j: v for j, v in outs.items() if j in by_job}
    nominal = dict(zip(names, plan.speeds, strict=True))
    measured = {}
    for name in names:
        times = sorted(processing_times(rig[name].server_log).values())
        measured[name] = times[len(times) // 2] if times else nominal[name]
    down = windows_by_printer(
        [(p, a, b) for kind, p, a, b in m.windows if kind in ("roll", "stock", "power")], names
    )
    printers = [IdealPrinter(n, measured[n], down[n]) for n in names]
    arrivals = [b.arrival for b in m.badges]
    ideal = ideal_schedule(arrivals, printers)
    waits = [min(t for _, t in ours[b.job_id]) - b.arrival for b in m.badges if b.job_id in ours]
    use = capacity_used(arrivals, [x for v in ours.values() for x in v], printers)
    gaps = idle_gaps(stand, use.periods)
    store = read_store(stand.data_dir)
    states = Counter(str(r["state"]) for j, r in store.jobs.items() if j in by_job)
    lag = [b.first_try - b.arrival for b in m.badges if b.first_try is not None]
    accept = [b.accepted - b.first_try for b in m.badges if b.accepted and b.first_try]
    capacity_per_min = 60.0 * sum(1 / s for s in measured.values())
    return {
        "badges": plan.badges,
        "accepted": len(by_job),
        "printed": len(ours),
        "duplicates": sum(len(v) - 1 for v in ours.values()),
        "losses": len(set(by_job) - set(ours)),
        "not_accepted": plan.badges - len(by_job),
        "wrong_stock": sum(wrong.values()),
        "wrong_stock_by_printer": dict(wrong),
        "wrong_stock_out_at_s": spoiled,
        "stock_unknown": unknown_stock,
        "capacity_used": None if use.ratio is None else round(use.ratio, 3),
        "work_waited_s": round(use.waiting_s, 1),
        "badges_per_min_while_waiting": _r(use.per_minute(use.printed_badges)),
        "capacity_per_min_while_waiting": _r(use.per_minute(use.capacity_badges)),
        "capacity_per_min_all_up": round(capacity_per_min, 1),
        "idle_gap_while_waiting_s": {k: round(v, 3) for k, v in percentiles(gaps).items()},
        "idle_gaps_while_waiting": len(gaps),
        "wait_s": {k: round(v, 2) for k, v in percentiles(waits).items()},
        "ideal_wait_s": {k: round(v, 2) for k, v in percentiles([s.wait for s in ideal]).items()},
        "kiosk_lag_s": {k: round(v, 3) for k, v in percentiles(lag).items()},
        "submit_to_accepted_s": {k: round(v, 3) for k, v in percentiles(accept).items()},
        "kiosk_tries": sum(b.tries for b in m.badges),
        "kiosk_503": m.kiosk_503,
        "kiosk_connection_errors": m.kiosk_connection_errors,
        "replayed": sum(1 for b in m.badges if b.replayed),
        "appliance_cpu_s": round(m.appliance_cpu_s, 1),
        "appliance_peak_rss_mib": m.appliance_peak_rss_mib,
        "appliance_restart_to_ready_s": m.appliance_down_s,
        "per_badge_s_nominal": nominal,
        "per_badge_s_measured": {n: round(s, 3) for n, s in measured.items()},
        "windows": [
            {
                "kind": k,
                "printer": p,
                "from_s": round(a - m.doors_open, 2),
                "for_s": round(b - a, 2),
            }
            for k, p, a, b in m.windows
        ],
        "states": dict(states),
        "doors_open_to_last_printed_s": _r(
            max((t for v in ours.values() for _, t in v), default=m.doors_open) - m.doors_open
        ),
        "ideal_last_printed_s": _r(max((s.finish for s in ideal), default=0) - m.doors_open),
        "settled": m.settled,
        "errors": m.errors,
        "technician_resolved": len(m.resolved),
        "technician_found_printed": sum(m.resolved.values()),
    }


def idle_gaps(stand: Stand, periods: tuple[tuple[float, float], ...]) -> list[float]:
    """Per printer, seconds from one badge out to the print engine starting the next
    (ippeveprinter's Processing time before the next prints.log line), where the next
    began while work waited: the appliance's part of the lost capacity."""
    out = []
    for p in stand.rig:
        proc = processing_times(p.server_log)
        lines = sorted(stand.rig.printed(p.name), key=printed_at)
        for prev, nxt in itertools.pairwise(lines):
            if nxt.job_id not in proc:
                continue
            start = printed_at(nxt) - proc[nxt.job_id]
            if start > printed_at(prev) and inside(start, periods):
                out.append(start - printed_at(prev))
    return out


def _r(v: float | None) -> float | None:
    return None if v is None else round(v, 1)
