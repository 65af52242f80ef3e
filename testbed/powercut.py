"""Power cuts under load: the appliance's data_dir on powerfs, cut at random instants.

Shared by tests/test_powercut.py (CI-sized) and bench/powercut_bench.py. Each round starts
the appliance (a child process) on the durable state, checks the store against the
client's record of every answer, runs a mixed load (submissions with Idempotency-Key,
held and not; releases; reads; printing on real printers; webhooks; housekeeping with a
short retention) and cuts the power at a seeded random instant. At the end the jobs meant
to print are printed, each once (the printers' logs), and every webhook of a stored
terminal job was delivered.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import random
import shutil
import sqlite3
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from edgeprint.server import DB_FILE
from testbed.config import KIOSK_TOKEN, rig_config, to_toml
from testbed.pdfs import make_pdf
from testbed.polling import TimedOut, until
from testbed.powerfs_control import PowerFs, fsync_dir
from testbed.proc import ServeProcess
from testbed.rig import Rig, printed_names

SECRET = "whsec_" + base64.b64encode(b"edgeprint-powercut-webhooks-32by").decode()
EVENTS = ["job.done", "job.dead", "job.cancelled", "job.expired"]
TERMINAL = {"DONE", "DEAD", "CANCELLED", "EXPIRED"}
#: Documents of finished jobs are deleted this soon, so housekeeping runs under the cuts.
RETENTION_S = 2.0
CLIENTS = 3
#: Clean stop-and-start rounds at the end (the normal start-up time to compare with).
CLEAN_STARTS = 5
SETTLE_TIMEOUT_S = 120.0


@dataclass
class Sent:
    """One submission as the client saw it."""

    key: str
    sha256: str
    held: bool
    job_id: str | None = None  # set by a 2xx
    released: bool = False  # a 2xx to its release


@dataclass
class Record:
    """Everything the client was told, and what the checks found."""

    sent: dict[str, Sent] = field(default_factory=dict)
    restart_s: list[float] = field(default_factory=list)
    #: Start → serving after a clean stop, on the same filesystem and store (the normal
    #: start-up time the restarts after a cut are compared with).
    clean_start_s: list[float] = field(default_factory=list)
    cut_s: list[float] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    corrupted: list[str] = field(default_factory=list)
    answers: dict[str, int] = field(default_factory=dict)

    def acked(self) -> list[Sent]:
        return [s for s in self.sent.values() if s.job_id is not None]

    def count(self, what: str) -> None:
        self.answers[what] = self.answers.get(what, 0) + 1


class Hooks:
    """A webhook receiver on loopback: the (type, job id) of each distinct webhook-id."""

    def __init__(self) -> None:
        self.seen: dict[str, tuple[str, str | None]] = {}
        self._runner: web.AppRunner | None = None
        self._arrived = asyncio.Event()
        self.url = ""

    async def _handle(self, request: web.Request) -> web.Response:
        payload = json.loads(await request.read())
        self.seen[request.headers["webhook-id"]] = (payload["type"], payload["data"].get("job_id"))
        self._arrived.set()
        return web.Response(status=204)

    async def until_all(self, expected: set[tuple[str, str | None]]) -> None:
        """Until every (type, job id) of ``expected`` was delivered (bound it with a timeout)."""
        while expected - self.delivered():
            self._arrived.clear()
            await self._arrived.wait()

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/hook", self._handle)
        self._runner = web.AppRunner(app, shutdown_timeout=0.1)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}/hook"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def delivered(self) -> set[tuple[str, str | None]]:
        return set(self.seen.values())


class PowerCutRun:
    """``await PowerCutRun(work, seed).run(cuts)``; the figures (see :meth:`summary`)."""

    def __init__(
        self, work: Path, seed: int, *, printers: int = 2, log: Callable[[str], None] = print
    ) -> None:
        self.work = work
        self.rng = random.Random(seed)
        self.seed = seed
        self.log = log
        self.fs = PowerFs(work / "powerfs-base", work / "mnt")
        self.rig = Rig(work / "rig", engine="lean")
        self.printers = printers
        self.hooks = Hooks()
        self.record = Record()
        self.data_dir = self.fs.mount / "data"
        self.server: ServeProcess | None = None
        self.rounds = 0

    # -- setup ---------------------------------------------------------------------------

    def _config(self) -> Path:
        cfg = rig_config(self.data_dir, self.rig)
        cfg["retention"] = {"interval_s": 0.5, "document_retention_s": RETENTION_S}
        hook = {"url": self.hooks.url, "secret": SECRET, "timeout_s": 2.0}
        hook |= {"retry_base_s": 0.02, "retry_max_s": 0.2, "poll_interval_s": 0.05}
        cfg["webhooks"] = [{**hook, "max_delivery_s": 3600.0}]
        path = self.work / "config.toml"
        # to_toml writes no arrays: the events list goes in as TOML (a JSON array is one)
        path.write_text(to_toml(cfg).rstrip("\n") + f"\nevents = {json.dumps(EVENTS)}\n")
        return path

    async def run(self, cuts: int) -> dict[str, Any]:
        self.work.mkdir(parents=True, exist_ok=True)
        self.fs.start()
        try:
            self.data_dir.mkdir()
            fsync_dir(self.fs.mount)  # the folder exists before the first boot, durably
            self.rig.start(self.printers)
            await self.hooks.start()
            self.server = ServeProcess(self._config(), self.work / "serve.log")
            async with aiohttp.ClientSession() as http:
                for _ in range(cuts):
                    await self._round(http)
                return await self._finish(http)
        finally:
            if self.server is not None:
                self.server.kill()
            await self.hooks.stop()
            self.rig.stop()
            self.fs.close()

    # -- one round -------------------------------------------------------------------------

    async def _start(self, http: aiohttp.ClientSession, *, clean: bool = False) -> str:
        """Start the appliance; restart → serving (ready line, then a 200 to a list), kept
        with the restarts after a cut, or (``clean``) with the starts after a clean stop."""
        assert self.server is not None
        t0 = time.monotonic()
        await asyncio.to_thread(self.server.start)
        url = self.server.url
        async with http.get(f"{url}/v1/jobs?limit=1", headers=_auth()) as r:
            if r.status != 200:
                raise AssertionError(f"not serving after restart: HTTP {r.status}")
        took = time.monotonic() - t0
        (self.record.clean_start_s if clean else self.record.restart_s).append(took)
        return url

    async def _clean_starts(self, http: aiohttp.ClientSession, n: int = CLEAN_STARTS) -> None:
        """Stop cleanly and start again ``n`` times on what the run left: the normal
        start-up time on this filesystem, beside the restarts after a cut."""
        assert self.server is not None
        for _ in range(n):
            await self._start(http, clean=True)
            await asyncio.to_thread(self.server.terminate)

    async def _round(self, http: aiohttp.ClientSession) -> None:
        assert self.server is not None
        self.check_durable_state()
        url = await self._start(http)
        await self._resubmit(http, url)
        stop = asyncio.Event()
        clients = [asyncio.create_task(self._client(http, url, i, stop)) for i in range(CLIENTS)]
        await asyncio.sleep(self.rng.uniform(0.05, 1.5))  # a random instant, not a sync stand-in
        t0 = time.monotonic()
        pid = self.server.proc.pid if self.server.proc is not None else 0
        await asyncio.to_thread(self.fs.cut, [pid])
        self.record.cut_s.append(time.monotonic() - t0)
        stop.set()
        for task in clients:
            task.cancel()
        await asyncio.gather(*clients, return_exceptions=True)
        self.server.kill()  # reap
        self.rounds += 1
        if self.rounds % 25 == 0:
            r = self.record
            self.log(
                f"powercut: {self.rounds} cuts, acknowledged jobs {len(r.acked())}, "
                f"lost {len(set(r.lost))}, corrupted {len(set(r.corrupted))} so far"
            )

    async def _client(
        self, http: aiohttp.ClientSession, url: str, n: int, stop: asyncio.Event
    ) -> None:
        rng = random.Random(self.rng.random())
        while not stop.is_set():
            roll = rng.random()
            try:
                if roll < 0.5:
                    await self._submit(http, url, rng)
                elif roll < 0.8:
                    await self._release(http, url, rng)
                else:
                    await self._read(http, url, rng)
            except (TimeoutError, aiohttp.ClientError):
                self.record.count("no answer")
                return  # the power is gone

    async def _submit(self, http: aiohttp.ClientSession, url: str, rng: random.Random) -> None:
        key = f"cut-{self.seed}-{len(self.record.sent):06d}"
        doc = make_pdf(key, pad_to=rng.choice((0, 0, 20_000, 200_000)))
        sent = Sent(key, hashlib.sha256(doc).hexdigest(), held=rng.random() < 0.5)
        self.record.sent[key] = sent
        await self._post_job(http, url, sent, doc)

    async def _post_job(
        self, http: aiohttp.ClientSession, url: str, sent: Sent, doc: bytes
    ) -> None:
        form = aiohttp.FormData()
        meta = {"owner": "ann", "pool": "lobby", "hold": sent.held}
        form.add_field("metadata", json.dumps(meta), content_type="application/json")
        form.add_field("document", doc, content_type="application/pdf", filename="b.pdf")
        headers = {**_auth(), "Idempotency-Key": sent.key}
        async with http.post(f"{url}/v1/jobs", data=form, headers=headers) as r:
            body = await r.json()
            self.record.count(f"submit {r.status}")
            if r.status in (200, 201):
                if sent.job_id not in (None, body["id"]):
                    self.record.corrupted.append(f"{sent.key}: a second id {body['id']}")
                sent.job_id = body["id"]
                if body["document"]["sha256"] != sent.sha256:
                    self.record.corrupted.append(f"{sent.key}: answered another sha256")

    async def _resubmit(self, http: aiohttp.ClientSession, url: str) -> None:
        """The same key again: an unanswered one (either outcome), an answered one (its id)."""
        unanswered = [s for s in self.record.sent.values() if s.job_id is None]
        answered = self.record.acked()
        for sent in self.rng.sample(unanswered, min(2, len(unanswered))) + self.rng.sample(
            answered, min(2, len(answered))
        ):
            doc = make_pdf(sent.key)
            for pad in (0, 20_000, 200_000):  # the document the submission carried
                doc = make_pdf(sent.key, pad_to=pad)
                if hashlib.sha256(doc).hexdigest() == sent.sha256:
                    break
            await self._post_job(http, url, sent, doc)

    async def _release(self, http: aiohttp.ClientSession, url: str, rng: random.Random) -> None:
        held = [s for s in self.record.acked() if s.held and not s.released]
        if not held:
            return await self._read(http, url, rng)
        sent = rng.choice(held)
        async with http.post(f"{url}/v1/jobs/{sent.job_id}/release", headers=_auth()) as r:
            await r.read()
            self.record.count(f"release {r.status}")
            if r.status == 200 or r.status == 409:
                sent.released = True
            elif r.status == 404:
                self.record.lost.append(f"{sent.key} ({sent.job_id}): release 404")
        return None

    async def _read(self, http: aiohttp.ClientSession, url: str, rng: random.Random) -> None:
        acked = self.record.acked()
        if not acked:
            return
        sent = rng.choice(acked)
        async with http.get(f"{url}/v1/jobs/{sent.job_id}", headers=_auth()) as r:
            body = await r.json()
            self.record.count(f"get {r.status}")
            if r.status == 404:
                self.record.lost.append(f"{sent.key} ({sent.job_id}): 404 after its 2xx")
            elif r.status == 200 and body["document"]["sha256"] != sent.sha256:
                self.record.corrupted.append(f"{sent.key}: GET shows another sha256")

    # -- the checks --------------------------------------------------------------------------

    def check_durable_state(self) -> dict[str, tuple[str, str]]:
        """The cut's state (before the appliance recovers it): a copy of the database passes
        ``PRAGMA integrity_check``; every answered job is in it with its document's sha256;
        every document a live job needs is in the spool, byte-identical."""
        db = self.data_dir / DB_FILE
        if not db.exists():
            if self.record.acked():
                self.record.lost.append(f"the database is gone after round {self.rounds}")
            return {}
        copy = self.work / "check"
        shutil.rmtree(copy, ignore_errors=True)
        copy.mkdir()
        for suffix in ("", "-wal"):
            src = db.with_name(db.name + suffix)
            if src.exists():
                shutil.copyfile(src, copy / src.name)
        con = sqlite3.connect(copy / db.name)
        try:
            ok = con.execute("PRAGMA integrity_check").fetchall()
            rows = con.execute("SELECT id, document_sha256, state FROM jobs").fetchall()
        finally:
            con.close()
        if ok != [("ok",)]:
            self.record.corrupted.append(f"round {self.rounds}: integrity_check {ok[:3]}")
        jobs = {str(i): (str(sha), str(state)) for i, sha, state in rows}
        for sent in self.record.acked():
            assert sent.job_id is not None
            if sent.job_id not in jobs:
                self.record.lost.append(f"{sent.key} ({sent.job_id}) after round {self.rounds}")
                continue
            sha, state = jobs[sent.job_id]
            doc = self.data_dir / "spool" / f"{sent.job_id}.pdf"
            if sha != sent.sha256:
                self.record.corrupted.append(f"{sent.key}: stored sha256 {sha}")
            elif state not in TERMINAL and not doc.exists():
                self.record.lost.append(f"{sent.key}: document missing while {state}")
            elif state not in TERMINAL and hashlib.sha256(doc.read_bytes()).hexdigest() != sha:
                self.record.corrupted.append(f"{sent.key}: spool file differs ({state})")
        return jobs

    def _live_jobs(self) -> dict[str, tuple[str, str]]:
        """The jobs as the running appliance has committed them (a WAL reader beside it)."""
        db = self.data_dir / DB_FILE
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
        try:
            rows = con.execute("SELECT id, document_sha256, state FROM jobs").fetchall()
        finally:
            con.close()
        return {str(i): (str(sha), str(state)) for i, sha, state in rows}

    async def _finish(self, http: aiohttp.ClientSession) -> dict[str, Any]:
        """Restart once more, let every released job print, check printers and webhooks."""
        assert self.server is not None
        self.check_durable_state()
        await self._start(http)
        jobs: dict[str, tuple[str, str]] = {}

        def busy() -> list[str]:
            return [i for i, (_, state) in jobs.items() if state in ("RELEASED", "PRINTING")]

        async def settled() -> bool:
            now = await asyncio.to_thread(self._live_jobs)
            jobs.clear()
            jobs.update(now)
            return not busy()

        try:
            await until(settled, "settled", timeout_s=SETTLE_TIMEOUT_S, every_s=0.2)  # the store
        except TimedOut:
            raise AssertionError(f"not settled in {SETTLE_TIMEOUT_S}s: {busy()[:5]}") from None
        names = printed_names(self.rig)
        duplicates = {n: p for n, p in names.items() if len(p) > 1}
        unknown = sorted(n for n in names if n.removeprefix("edgeprint-") not in jobs)
        unprinted = []
        for sent in self.record.acked():
            want = not sent.held or sent.released
            state = jobs.get(str(sent.job_id), ("", ""))[1]
            if want and (state != "DONE" or f"edgeprint-{sent.job_id}" not in names):
                unprinted.append(f"{sent.key} ({sent.job_id}): {state}")
        for job_id, (_, state) in jobs.items():
            if state == "DONE" and f"edgeprint-{job_id}" not in names:
                unprinted.append(f"{job_id}: DONE, not on any printer's log")
        expected: set[tuple[str, str | None]] = {
            (f"job.{s.lower()}", i) for i, (_, s) in jobs.items() if s in TERMINAL
        }
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.hooks.until_all(expected), 60)
        lost_hooks = sorted(expected - self.hooks.delivered())
        self.server.terminate()
        self.check_durable_state()
        await self._clean_starts(http)
        return self.summary(jobs, duplicates, unknown, unprinted, lost_hooks)

    def summary(
        self,
        jobs: dict[str, tuple[str, str]],
        duplicates: dict[str, list[str]],
        unknown: list[str],
        unprinted: list[str],
        lost_hooks: list[tuple[str, str | None]],
    ) -> dict[str, Any]:
        r = self.record
        states: dict[str, int] = {}
        for _, state in jobs.values():
            states[state] = states.get(state, 0) + 1
        restart = sorted(r.restart_s)
        clean = sorted(r.clean_start_s)
        return {
            "seed": self.seed,
            "cuts": self.rounds,
            "acknowledged_jobs": len(r.acked()),
            "submissions": len(r.sent),
            "lost": len(set(r.lost)),
            "corrupted": len(set(r.corrupted)),
            "duplicates": len(duplicates),
            "printed_unknown": len(unknown),
            "unprinted": len(unprinted),
            "webhooks_lost": len(lost_hooks),
            "webhooks_delivered": len(self.hooks.seen),
            "jobs_by_state": states,
            "restart_to_serving_ms": {
                "p50": round(statistics.median(restart) * 1000) if restart else None,
                "max": round(restart[-1] * 1000) if restart else None,
            },
            "clean_start_ms": {
                "p50": round(statistics.median(clean) * 1000) if clean else None,
                "max": round(clean[-1] * 1000) if clean else None,
                "starts": len(clean),
            },
            "cut_ms_p50": round(statistics.median(r.cut_s) * 1000) if r.cut_s else None,
            "answers": dict(sorted(r.answers.items())),
            "powerfs": self.fs.stats() if self.fs.proc is not None else {},
            "details": {
                "lost": sorted(set(r.lost))[:20],
                "corrupted": sorted(set(r.corrupted))[:20],
                "duplicates": dict(list(duplicates.items())[:20]),
                "printed_unknown": unknown[:20],
                "unprinted": unprinted[:20],
                "webhooks_lost": lost_hooks[:20],
            },
        }


def line(s: dict[str, Any]) -> str:
    """The one-line result (issue 27)."""
    return (
        f"powercut: {s['cuts']} cuts, acknowledged jobs {s['acknowledged_jobs']}, "
        f"lost {s['lost']}, corrupted {s['corrupted']}, duplicates {s['duplicates']}, "
        f"restart → serving p50 {s['restart_to_serving_ms']['p50']} ms"
    )


def _auth() -> dict[str, str]:
    return {"Authorization": f"Bearer {KIOSK_TOKEN}"}
