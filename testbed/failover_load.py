"""Submissions, releases and prints on two appliances while the Patroni primary fails over.

Shared by tests/test_pg_failover.py and ``bench.pg_bench --only failover`` (issue 27 §2).
The client keeps a record of every answer; a write that fails (503 ``store-unavailable``, or
no answer within the client timeout) is retried with the same Idempotency-Key (a submission)
or again (a release: a 409 then means an earlier, in-doubt attempt was stored). After the
run the record is checked against the database and the printers' own logs.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import psycopg

from testbed.config import KIOSK_TOKEN, TECH_TOKEN, rig_config, to_toml
from testbed.patroni import Node, PatroniCluster
from testbed.pdfs import make_pdf
from testbed.polling import until
from testbed.proc import ServeProcess
from testbed.rig import Rig, printed_names

STORE_UNAVAILABLE = "urn:edgeprint:problem:store-unavailable"
#: The kiosk's patience: no answer within this is a hang (counted, and a failure of the run).
CLIENT_TIMEOUT_S = 15.0
#: How long a commit or read may wait for the server (then 503).
QUERY_TIMEOUT_S = 3.0
#: How long the returning host gets to become the synchronous standby by itself.
REJOIN_S = 30.0
#: Short leases so the printers change hands quickly after the store is back.
CLUSTER = {"lease_s": 1.5, "heartbeat_s": 0.5, "margin_s": 0.25}


def appliances(cluster: PatroniCluster, url: str, rig: Rig, root: Path) -> list[ServeProcess]:
    """Two unstarted ``edgeprint serve`` processes (a, b) sharing the store at ``url``."""
    procs = []
    for name in ("a", "b"):
        cfg = rig_config(root / name, rig, pool="lobby")
        cfg["store"] = {"url": url, "shared": True, "query_timeout_s": QUERY_TIMEOUT_S,
                        "connect_timeout_s": 5.0}  # fmt: skip
        cfg["cluster"] = {"appliance_id": name, **CLUSTER}
        path = root / f"{name}.toml"
        path.write_text(to_toml(cfg))
        procs.append(ServeProcess(path, root / f"{name}.log"))
    return procs


@dataclass
class Answer:
    op: str
    sent: float
    done: float
    status: int  # 0: no answer (the client timed out or the connection failed)
    type: str = ""
    content_type: str = ""

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


@dataclass
class Run:
    """What one failover run saw."""

    kind: str
    answers: list[Answer] = field(default_factory=list)
    submitted: dict[str, str] = field(default_factory=dict)  # Idempotency-Key → job id (2xx)
    released: set[str] = field(default_factory=set)
    fault_at: float = 0.0
    takeover_s: float = 0.0
    back_s: float = 0.0
    #: Times the returning host had to be rebuilt from the primary (``patronictl reinit``):
    #: Patroni 3.0 did not pg_rewind a primary demoted while cut off (its WAL diverged).
    reinits: int = 0
    states: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    printed: dict[str, list[str]] = field(default_factory=dict)

    @property
    def unavailable_s(self) -> float:
        """Client side: the first failed write after the fault → the first success after it."""
        writes = sorted((a for a in self.answers if a.op != "read"), key=lambda a: a.sent)
        fails = [a for a in writes if not a.ok and a.done >= self.fault_at]
        if not fails:
            return 0.0
        first = min(fails, key=lambda a: a.sent)
        oks = [a.done for a in writes if a.ok and a.sent >= first.done]
        return (min(oks) if oks else max(a.done for a in writes)) - first.sent

    @property
    def lost(self) -> list[str]:
        """Acknowledged jobs missing from the store, and acknowledged releases not printed."""
        out = [i for i in self.submitted.values() if i not in self.states]
        for job_id in self.released:
            state, reason = self.states.get(job_id, ("missing", None))
            settled = state == "DONE" or (state, reason) == ("DEAD", "outcome_unknown")
            paper = state != "DONE" or f"edgeprint-{job_id}" in self.printed
            if not (settled and paper):
                out.append(job_id)
        return out

    @property
    def duplicates(self) -> dict[str, list[str]]:
        return {n: ps for n, ps in self.printed.items() if len(ps) > 1}

    @property
    def strangers(self) -> set[str]:
        """Printed, but no job the client was told about (a submission answered 5xx only)."""
        known = {f"edgeprint-{i}" for i in self.submitted.values()}
        return set(self.printed) - known

    @property
    def statuses(self) -> Counter[tuple[int, str]]:
        return Counter((a.status, a.type) for a in self.answers if not a.ok)

    @property
    def slowest_s(self) -> float:
        return max((a.done - a.sent for a in self.answers), default=0.0)

    def summary(self) -> str:
        return (
            f"{self.kind}: {len(self.submitted)} jobs acknowledged, {len(self.released)} released;"
            f" takeover {self.takeover_s:.1f} s, back {self.back_s:.1f} s, write unavailable "
            f"{self.unavailable_s:.1f} s, reinits {self.reinits}, slowest answer {self.slowest_s:.1f} s, failed answers "
            f"{dict(self.statuses)}, lost {len(self.lost)}, duplicates {len(self.duplicates)}"
        )


class Kiosk:
    """One client loop's HTTP calls, each recorded in ``run.answers``."""

    def __init__(self, http: aiohttp.ClientSession, url: str, run: Run) -> None:
        self.http, self.url, self.run = http, url, run

    async def call(self, op: str, method: str, path: str, **kw: Any) -> tuple[int, Any]:
        sent = time.monotonic()
        headers = {"Authorization": f"Bearer {TECH_TOKEN if op == 'read' else KIOSK_TOKEN}",
                   **kw.pop("headers", {})}  # fmt: skip
        try:
            async with self.http.request(method, f"{self.url}{path}", headers=headers, **kw) as r:
                raw = await r.read()
                body = json.loads(raw) if raw else {}
                kind = body.get("type", "") if isinstance(body, dict) else ""
                self.run.answers.append(
                    Answer(op, sent, time.monotonic(), r.status, kind, r.content_type)
                )
                return r.status, body
        except (TimeoutError, aiohttp.ClientError, ValueError) as exc:
            self.run.answers.append(Answer(op, sent, time.monotonic(), 0, type(exc).__name__))
            return 0, None

    async def submit_once(self, key: str) -> tuple[int, Any]:
        form = aiohttp.FormData()
        form.add_field("metadata", json.dumps({"owner": "ann", "pool": "lobby"}),
                       content_type="application/json")  # fmt: skip
        form.add_field("document", make_pdf(key), content_type="application/pdf",
                       filename="b.pdf")  # fmt: skip
        return await self.call(
            "submit", "POST", "/v1/jobs", data=form, headers={"Idempotency-Key": key}
        )

    async def submit(self, key: str, deadline: float) -> str | None:
        while time.monotonic() < deadline:
            status, body = await self.submit_once(key)
            if status in (200, 201):
                job_id: str = body["id"]
                self.run.submitted[key] = job_id
                return job_id
            await asyncio.sleep(0.2)  # the kiosk's retry pace
        return None

    async def release(self, job_id: str, deadline: float) -> bool:
        tried = False
        while time.monotonic() < deadline:
            status, _ = await self.call("release", "POST", f"/v1/jobs/{job_id}/release")
            if status == 200:
                self.run.released.add(job_id)
                return True
            if status == 409:
                state = await self.state(job_id)
                if tried and state not in (None, "HELD"):
                    self.run.released.add(job_id)  # an in-doubt attempt was stored
                    return True
            tried = True
            await asyncio.sleep(0.2)  # the kiosk's retry pace
        return False

    async def state(self, job_id: str) -> str | None:
        status, body = await self.call("read", "GET", f"/v1/jobs/{job_id}")
        return str(body["state"]) if status == 200 else None


async def run_failover(
    cluster: PatroniCluster,
    procs: list[ServeProcess],
    url: str,
    rig: Rig,
    kind: str,
    *,
    loops: int = 2,
    pace_s: float = 0.15,
    after_s: float = 3.0,
) -> Run:
    """Load on both appliances; ``kind`` "kill" (SIGKILL the primary's Patroni and
    PostgreSQL, then start it again once the other node is primary, as a rebooted host) or
    "cut" (cut the primary's network, then plug it back once the other node is primary);
    load goes on ``after_s`` after writes succeed again, then every released job is
    waited for. The primary must be the node in the namespace for "cut"."""
    run = Run(kind)
    stop = asyncio.Event()
    timeout = aiohttp.ClientTimeout(total=CLIENT_TIMEOUT_S)
    async with aiohttp.ClientSession(timeout=timeout) as http:
        kiosks = [Kiosk(http, procs[i % len(procs)].url, run) for i in range(loops)]

        async def loop(i: int, kiosk: Kiosk) -> None:
            n = 0
            while not stop.is_set():
                deadline = time.monotonic() + 120
                job_id = await kiosk.submit(f"fo-{kind}-{i}-{n}", deadline)
                n += 1
                if job_id is not None:
                    await kiosk.release(job_id, deadline)
                await asyncio.sleep(pace_s)  # the load's pace, not a synchronisation

        tasks = [asyncio.create_task(loop(i, k)) for i, k in enumerate(kiosks)]
        try:
            await until(lambda: len(run.released) >= 2 * loops, "load under way", timeout_s=60)
            await _fault(cluster, run, kind)
            await until(lambda: _wrote_since(run), "a write succeeds again", timeout_s=60)
            await asyncio.sleep(after_s)  # more load on the store that is back: a window
        finally:
            stop.set()
            await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 150)
        released = list(run.released)

        def settled() -> bool:
            run.states = states(url, list(run.submitted.values()))
            return all(run.states.get(i, ("", None))[0] in ("DONE", "DEAD") for i in released)

        what = "every released job DONE"
        await until(lambda: asyncio.to_thread(settled), what, timeout_s=120, every_s=0.05)
    run.printed = printed_names(rig)
    return run


def _wrote_since(run: Run) -> bool:
    """A write answered OK after the fault was back (the store takes writes again)."""
    back = run.fault_at + run.back_s
    return any(a.ok and a.sent > back for a in run.answers if a.op != "read")


async def _fault(cluster: PatroniCluster, run: Run, kind: str) -> None:
    primary = cluster.primary()
    assert primary is not None, "no primary before the fault"
    run.fault_at = time.monotonic()
    if kind == "kill":
        await asyncio.to_thread(cluster.kill, primary)
    else:
        await asyncio.to_thread(cluster.cut, primary)
    await asyncio.to_thread(cluster.wait_primary, 120, primary)
    run.takeover_s = time.monotonic() - run.fault_at
    await _back(cluster, primary, kind)
    run.back_s = time.monotonic() - run.fault_at
    try:
        await asyncio.to_thread(cluster.wait_sync_standby, REJOIN_S)
    except RuntimeError:  # diverged and not rewound: the operator rebuilds it
        run.reinits += 1
        await asyncio.to_thread(cluster.reinit, primary)
        await asyncio.to_thread(cluster.wait_sync_standby, 120)


async def _back(cluster: PatroniCluster, node: Node, kind: str) -> None:
    """The lost host returns, rebooted, and becomes the standby. A host cut off the network
    is rebooted too (killed, cable back, started): plugging the cable back into the running
    host left Patroni 3.0.2 demoting it twice at once, its old postmaster still running, and
    pg_rewind failing on it — a former primary that never rejoined (DESIGN §10)."""
    if kind == "cut":
        await asyncio.to_thread(cluster.kill, node)
        await asyncio.to_thread(cluster.reconnect, node)
    await asyncio.to_thread(cluster.start_node, node)


def states(url: str, ids: list[str]) -> dict[str, tuple[str, str | None]]:
    with psycopg.connect(url, connect_timeout=5) as conn:
        rows = conn.execute(
            "SELECT id, state, dead_reason FROM jobs WHERE id = ANY(%s)", (ids,)
        ).fetchall()
    return {r[0]: (r[1], r[2]) for r in rows}
