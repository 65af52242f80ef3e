"""Shared fixtures: a real appliance (real SQLite file, real HTTP on loopback)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from edgeprint.config import Config, parse_config
from edgeprint.server import DB_FILE, Running, running
from testbed.config import KIOSK_TOKEN as KIOSK_TOKEN
from testbed.config import TECH_TOKEN as TECH_TOKEN
from testbed.config import config_dict as config_dict
from testbed.config import to_toml as to_toml
from testbed.pdfs import make_pdf

pytest_plugins = [
    "tests.rig_fixtures",
    "tests.mdns",
    "tests.pg_fixtures",
    "tests.memory_fixtures",
    "tests.browser",
]


@pytest.fixture
def config(tmp_path: Path) -> Config:
    return parse_config(config_dict(tmp_path / "data"))


@dataclass
class Appliance:
    """A running appliance and an HTTP client for it."""

    running: Running
    http: aiohttp.ClientSession
    config: Config

    @property
    def url(self) -> str:
        return f"http://{self.running.host}:{self.running.port}"

    @property
    def data_dir(self) -> Path:
        return self.config.server.data_dir

    def headers(self, token: str = KIOSK_TOKEN, **extra: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}", **extra}

    async def submit(
        self,
        metadata: dict[str, Any] | None = None,
        document: bytes | None = None,
        key: str = "key-00000001",
        token: str = KIOSK_TOKEN,
    ) -> aiohttp.ClientResponse:
        """POST /v1/jobs with a multipart body; the response is read (use .json())."""
        form = aiohttp.FormData()
        meta = {"owner": "ann", "pool": "lobby"} if metadata is None else metadata
        form.add_field("metadata", json.dumps(meta), content_type="application/json")
        form.add_field(
            "document",
            make_pdf() if document is None else document,
            content_type="application/pdf",
            filename="badge.pdf",
        )
        resp = await self.http.post(
            f"{self.url}/v1/jobs",
            data=form,
            headers=self.headers(token, **{"Idempotency-Key": key}),
        )
        await resp.read()
        return resp

    async def post(
        self, path: str, body: Any = None, token: str = KIOSK_TOKEN
    ) -> aiohttp.ClientResponse:
        resp = await self.http.post(f"{self.url}{path}", json=body, headers=self.headers(token))
        await resp.read()
        return resp

    async def get(self, path: str, token: str = KIOSK_TOKEN) -> aiohttp.ClientResponse:
        resp = await self.http.get(f"{self.url}{path}", headers=self.headers(token))
        await resp.read()
        return resp

    def snapshot(self) -> dict[str, Any]:
        """Everything stored: job rows, event rows and spool files (to assert 'nothing changed')."""
        with sqlite3.connect(self.data_dir / DB_FILE) as db:
            jobs = db.execute("SELECT * FROM jobs ORDER BY seq").fetchall()
            events = db.execute("SELECT * FROM job_events ORDER BY seq").fetchall()
        spool = sorted(p.name for p in (self.data_dir / "spool").rglob("*") if p.is_file())
        return {"jobs": jobs, "events": events, "spool": spool}


@pytest.fixture
def make_appliance(tmp_path: Path) -> Callable[..., Any]:
    """Factory: ``async with make_appliance(sections={...}, **server_overrides) as app: …``.

    ``sections`` adds or replaces whole config tables (``{"retention": {...}}``).
    """
    import contextlib

    @contextlib.asynccontextmanager
    async def _make(
        sections: dict[str, Any] | None = None, **server: Any
    ) -> AsyncIterator[Appliance]:
        cfg = parse_config({**config_dict(tmp_path / "data", **server), **(sections or {})})
        async with running(cfg) as run:
            connector = aiohttp.TCPConnector(limit=0)
            async with aiohttp.ClientSession(connector=connector) as http:
                yield Appliance(run, http, cfg)

    return _make


@pytest.fixture
async def app(make_appliance: Callable[..., Any]) -> AsyncIterator[Appliance]:
    async with make_appliance() as a:
        yield a
