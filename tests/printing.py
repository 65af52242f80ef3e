"""Helpers for tests that print on real ippeveprinter printers through a real appliance."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from edgeprint.config import parse_config
from edgeprint.server import Running, running
from tests.conftest import KIOSK_TOKEN, TECH_TOKEN, config_dict
from tests.pdfs import make_pdf
from tests.rig import Rig

#: Fast dispatch settings for tests (seconds).
FAST_DISPATCH = {
    "poll_interval_min_s": 0.005,
    "poll_interval_max_s": 0.05,
    "idle_probe_interval_s": 0.5,
    "unreachable_retry_max_s": 0.2,
    "busy_backoff_s": 0.02,
    "retry_base_s": 0.05,
    "retry_max_s": 0.2,
    "request_timeout_s": 2.0,
    "upload_timeout_s": 5.0,
}


def rig_config(
    data_dir: Path, rig: Rig, pool: str | None = "lobby", **dispatch: Any
) -> dict[str, Any]:
    """A config dict whose printers are the rig's (all in ``pool``), with fast dispatch."""
    cfg = config_dict(data_dir)
    cfg["printers"] = [
        {"name": p.name, "uri": p.uri, **({"pool": pool} if pool else {})} for p in rig
    ]
    cfg["dispatch"] = {**FAST_DISPATCH, **dispatch}
    return cfg


@dataclass
class Client:
    """A kiosk's view of an appliance at ``url``."""

    http: aiohttp.ClientSession
    url: str

    async def submit(self, key: str, *, doc: bytes | None = None, **meta: Any) -> dict[str, Any]:
        form = aiohttp.FormData()
        form.add_field(
            "metadata", json.dumps({"owner": "ann", **meta}), content_type="application/json"
        )
        form.add_field(
            "document", doc or make_pdf(key), content_type="application/pdf", filename="b.pdf"
        )
        headers = {"Authorization": f"Bearer {KIOSK_TOKEN}", "Idempotency-Key": key}
        async with self.http.post(f"{self.url}/v1/jobs", data=form, headers=headers) as r:
            body: dict[str, Any] = await r.json()
            assert r.status in (200, 201), body
            return body

    async def post(self, path: str, body: Any = None, tech: bool = False) -> tuple[int, Any]:
        token = TECH_TOKEN if tech else KIOSK_TOKEN
        headers = {"Authorization": f"Bearer {token}"}
        async with self.http.post(f"{self.url}{path}", json=body, headers=headers) as r:
            return r.status, await r.json()

    async def job(self, job_id: str) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {KIOSK_TOKEN}"}
        async with self.http.get(f"{self.url}/v1/jobs/{job_id}", headers=headers) as r:
            assert r.status == 200
            body: dict[str, Any] = await r.json()
            return body

    async def wait_states(
        self, ids: list[str], states: set[str], timeout_s: float = 30.0
    ) -> list[dict[str, Any]]:
        """Poll until every job is in one of ``states``; the jobs. Fails after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while True:
            jobs = [await self.job(i) for i in ids]
            if all(j["state"] in states for j in jobs):
                return jobs
            if time.monotonic() > deadline:
                pending = {j["id"]: j["state"] for j in jobs if j["state"] not in states}
                raise AssertionError(f"not {states} after {timeout_s}s: {pending}")
            await asyncio.sleep(0.02)  # polling a condition, bounded by the deadline


def printed_names(rig: Rig) -> dict[str, list[str]]:
    """job-name → printers that printed it (ground truth from each printer's log)."""
    out: dict[str, list[str]] = {}
    for p in rig:
        for line in rig.printed(p.name):
            out.setdefault(line.job_name, []).append(p.name)
    return out


def assert_each_printed_once(rig: Rig, job_ids: list[str]) -> None:
    """Ground truth: every job printed exactly once, on one printer, and nothing else printed."""
    names = printed_names(rig)
    expected = {f"edgeprint-{i}" for i in job_ids}
    twice = {n: ps for n, ps in names.items() if len(ps) > 1}
    assert not twice, f"printed more than once: {twice}"
    assert set(names) == expected, (
        f"missing: {sorted(expected - set(names))}, unexpected: {sorted(set(names) - expected)}"
    )


@contextlib.asynccontextmanager
async def appliance(cfg: dict[str, Any]) -> AsyncIterator[tuple[Running, Client]]:
    """An in-process appliance for ``cfg`` and a kiosk client."""
    async with running(parse_config(cfg)) as run, aiohttp.ClientSession() as http:
        yield run, Client(http, f"http://{run.host}:{run.port}")
