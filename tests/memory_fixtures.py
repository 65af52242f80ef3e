"""The service over the in-memory store (edgeprint.store.memory): unit tests in milliseconds.

``memory_service`` is a :class:`JobService` on a :class:`MemoryStore`, a spool in
``tmp_path`` and a clock the test moves (time is a parameter). Tests that need a
printer, HTTP or durability use the real appliance (tests/conftest.py); the store
conformance tests (tests/pg_fixtures.py) hold the in-memory store to the real ones.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from edgeprint.config import parse_config
from edgeprint.metrics import Metrics
from edgeprint.models import SubmitMetadata
from edgeprint.service import Caller, JobService
from edgeprint.service.records import SubmitResult
from edgeprint.spool import Spool
from edgeprint.store.jobs import Jobs
from edgeprint.store.memory import MemoryStore
from testbed.config import config_dict
from testbed.pdfs import make_pdf

KIOSK = Caller("kiosk-1", "kiosk", "corr-kiosk")
TECH = Caller("tech-1", "tech", "corr-tech")


class Clock:
    """Wall and run clock at once, moved by the test."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@dataclass
class MemoryService:
    """A service over an in-memory store, its clock, and a way to submit."""

    service: JobService
    store: MemoryStore
    clock: Clock

    async def submit(
        self, key: str = "key-00000001", document: bytes | None = None, **meta: Any
    ) -> SubmitResult:
        """Submit ``document`` (a one-page PDF) for ann, held for pool lobby unless ``meta``
        says otherwise."""
        staged = self.service.spool.stage()
        staged.write(make_pdf() if document is None else document)
        fields: dict[str, Any] = {"owner": "ann", "pool": "lobby", **meta}
        return await self.service.front.submit(SubmitMetadata(**fields), staged, key, KIOSK)


@pytest.fixture
async def memory_service(tmp_path: Path) -> AsyncIterator[MemoryService]:
    """A :class:`MemoryService` (printers 01 and 02 in pool lobby, 03 alone)."""
    config = parse_config(config_dict(tmp_path / "data"))
    config.server.data_dir.mkdir(parents=True)
    spool = Spool(config.server.data_dir)
    spool.prepare()
    store = MemoryStore()
    await store.open()
    clock = Clock()
    service = JobService(config, Jobs(store), spool, Metrics(), clock=clock)
    try:
        yield MemoryService(service, store, clock)
    finally:
        service.documents.close()
        await store.close()
