"""Helpers for tests that print on real ippeveprinter printers through a real appliance."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp

from edgeprint.config import parse_config
from edgeprint.server import Running, running
from testbed.config import FAST_DISPATCH as FAST_DISPATCH
from testbed.config import KIOSK_TOKEN, TECH_TOKEN
from testbed.config import rig_config as rig_config
from testbed.pdfs import make_pdf
from testbed.rig import Rig
from testbed.rig import printed_names as printed_names
from tests.polling import eventually


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
        jobs: list[dict[str, Any]] = []

        async def settled() -> bool:
            jobs[:] = [await self.job(i) for i in ids]
            return all(j["state"] in states for j in jobs)

        def pending() -> str:
            late = {j["id"]: j["state"] for j in jobs if j["state"] not in states}
            return f"every job in {states}; not yet: {late}"

        await eventually(settled, pending, timeout_s=timeout_s, every_s=0.02)
        return jobs


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
