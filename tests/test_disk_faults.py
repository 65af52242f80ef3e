"""A disk that stops taking writes and comes back (issue 27 §4), on the powerfs FUSE layer.

The appliance's data_dir (SQLite file, WAL, spool) lives on testbed/powerfs.py, whose
fault modes turn the disk ``erofs`` (every change refused with EROFS), ``eio`` (writes and
fsyncs fail with EIO) or ``fsync-eio`` (only fsyncs fail, and what they were asked to
write is dropped) while jobs are submitted and printed on the real printer rig. In each:
new work gets 503 ``store-unavailable`` with a Retry-After (problem+json), releases too;
reads work; ``/readyz`` says why; the job the printer holds is not recorded DONE (its
write fails) and waits. Back to ``ok``, the appliance takes writes again by itself (no
restart): the refused submissions are accepted with their keys, every job prints exactly
once (the printers' logs), every accepted job's document is byte-identical, nothing is
half-written and SQLite's integrity check passes. A SIGHUP reload while the disk is
read-only is applied and logged, and the jobs it could not move still print.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import io
import json
import logging
import signal
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from edgeprint.server import DB_FILE
from edgeprint.store import health
from testbed.pdfs import make_pdf
from testbed.powerfs_control import PowerFs
from testbed.proc import ServeProcess
from testbed.rig import Rig
from tests.conftest import KIOSK_TOKEN, TECH_TOKEN, config_dict, to_toml
from tests.polling import eventually, eventually_sync
from tests.powerfs_fixtures import require_powerfs
from tests.printing import Client, appliance, assert_each_printed_once, rig_config

pytestmark = pytest.mark.slow

STORE_UNAVAILABLE = "urn:edgeprint:problem:store-unavailable"
#: What /readyz says for each fault mode.
READY_WORDS = {"erofs": "read-only", "eio": "I/O errors", "fsync-eio": "I/O errors"}


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[PowerFs]:
    """A powerfs mount at ``tmp_path/mnt`` (unmounted and its process ended after)."""
    require_powerfs()
    with PowerFs(tmp_path / "base", tmp_path / "mnt") as fs:
        fs.start()
        yield fs


class Kiosk:
    """Submits, and keeps the client-side record: every 201's id and document digest."""

    def __init__(self, c: Client) -> None:
        self.c = c
        self.accepted: dict[str, tuple[str, str]] = {}  # key → (job id, sha256 of the document)
        self.docs: dict[str, bytes] = {}

    async def post(self, key: str, hold: bool = False) -> tuple[int, dict[str, Any], str, str]:
        doc = self.docs.setdefault(key, make_pdf(key, pad_to=48 * 1024))
        form = aiohttp.FormData()
        meta = {"owner": "ann", "pool": "lobby", "hold": hold}
        form.add_field("metadata", json.dumps(meta), content_type="application/json")
        form.add_field("document", io.BytesIO(doc), content_type="application/pdf", filename="d")
        headers = {"Authorization": f"Bearer {KIOSK_TOKEN}", "Idempotency-Key": key}
        async with self.c.http.post(f"{self.c.url}/v1/jobs", data=form, headers=headers) as r:
            body = await r.json(content_type=None)
            answer = (r.status, body, r.content_type, r.headers.get("Retry-After", ""))
        if r.status in (200, 201):
            self.accepted[key] = (body["id"], hashlib.sha256(doc).hexdigest())
        return answer

    async def accept(self, key: str, hold: bool = False) -> str:
        status, body, _, _ = await self.post(key, hold)
        assert status == 201, body
        return str(body["id"])

    def ids(self) -> list[str]:
        return [job_id for job_id, _ in self.accepted.values()]


def assert_refused(answer: tuple[int, dict[str, Any], str, str]) -> None:
    status, body, content_type, retry_after = answer
    assert (status, body.get("type")) == (503, STORE_UNAVAILABLE), body
    assert content_type == "application/problem+json"
    assert "retry later" in body["detail"]
    assert retry_after == "5"


async def ready(c: Client) -> tuple[int, str]:
    async with c.http.get(f"{c.url}/readyz") as r:
        return r.status, str((await r.json()).get("detail", ""))


async def metric(c: Client, line_start: str) -> float | None:
    async with c.http.get(f"{c.url}/metrics") as r:
        for line in (await r.text()).splitlines():
            if line.startswith(line_start + " "):
                return float(line.split()[-1])
    return None


def assert_intact(data_dir: Path, kiosk: Kiosk) -> None:
    """Every 2xx job is stored with its document byte-identical, nothing else is, nothing is
    left half-written in spool/tmp, and SQLite's integrity check passes."""
    spool = data_dir / "spool"
    assert [p.name for p in (spool / "tmp").iterdir()] == []
    ids = set(kiosk.ids())
    assert {p.stem for p in spool.glob("*.pdf")} == ids
    for job_id, sha in kiosk.accepted.values():
        assert hashlib.sha256((spool / f"{job_id}.pdf").read_bytes()).hexdigest() == sha
    db = sqlite3.connect(f"file:{data_dir / DB_FILE}?mode=ro", uri=True)
    try:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        rows = dict(db.execute("SELECT id, document_sha256 FROM jobs").fetchall())
    finally:
        db.close()
    assert rows == {job_id: sha for job_id, sha in kiosk.accepted.values()}


async def test_erofs_eio_and_fsync_eio_mid_run_then_recovery_by_itself(
    disk: PowerFs, printers: Rig
) -> None:
    data_dir = disk.mount / "data"
    for p in printers:
        printers.set_speed(p.name, 0.6)  # a copy stays at the printer while the disk fails
    cfg = rig_config(data_dir, printers)
    async with appliance(cfg) as (run, c):
        kiosk = Kiosk(c)
        held = [await kiosk.accept(f"held-{i:04d}", hold=True) for i in range(3)]
        for round_, mode in enumerate(("erofs", "eio", "fsync-eio")):
            printing = [await kiosk.accept(f"{mode}-print-{i}") for i in range(3)]
            await c.wait_states(printing[:1], {"PRINTING", "DONE"})
            disk.set_mode(mode)

            # New work, the same key again later, a release: 503 with nothing stored.
            refused = [f"{mode}-refused-{i}" for i in range(3)]
            for key in refused:
                assert_refused(await kiosk.post(key))
            status, body = await c.post(f"/v1/jobs/{held[round_]}/release")
            assert (status, body["type"]) == (503, STORE_UNAVAILABLE), body
            # Reads work; /readyz and the metrics say the store refuses writes, and why.
            for job_id in printing + held:
                await c.job(job_id)
            status, detail = await ready(c)
            assert status == 503
            assert READY_WORDS[mode] in detail, detail
            assert await metric(c, "edgeprint_store_writable") == 0
            assert not run.dispatch_task.done()

            disk.set_mode("ok")
            back = time.monotonic()

            async def writable() -> bool:
                return (await ready(c))[0] == 200

            await eventually(writable, f"ready again after {mode}", timeout_s=20)
            recovered_s = time.monotonic() - back
            print(f"disk faults: {mode} → ready again {recovered_s * 1000:.0f} ms after the disk")
            assert recovered_s < 2 * health.PROBE_INTERVAL_S + 1.0  # a probe's pace, no restart
            assert await metric(c, "edgeprint_store_writable") == 1
            for key in refused:  # the kiosk's retries, with the same keys
                await kiosk.accept(key)
            status, body = await c.post(f"/v1/jobs/{held[round_]}/release")
            assert status == 200, body
            await c.wait_states(printing, {"DONE"}, timeout_s=60)

        errors_total = {
            kind: await metric(c, f'edgeprint_store_write_errors_total{{kind="{kind}"}}')
            for kind in ("read-only", "io")
        }
        assert all(v is not None and v > 0 for v in errors_total.values()), errors_total
        jobs = await c.wait_states(kiosk.ids(), {"DONE"}, timeout_s=90)
        assert {j["state"] for j in jobs} == {"DONE"}
        assert not run.dispatch_task.done()
    assert run.dispatch_task.exception() is None
    assert_each_printed_once(printers, kiosk.ids())
    assert_intact(data_dir, kiosk)


async def test_fsync_errors_refuse_uploads_and_keep_nothing(disk: PowerFs) -> None:
    """A FUSE layer that fails every fsync: each upload is refused (503) and leaves nothing;
    afterwards the same keys are accepted once, with their documents intact."""
    data_dir = disk.mount / "data"
    async with appliance(config_dict(data_dir)) as (run, c):
        kiosk = Kiosk(c)
        before = [await kiosk.accept(f"before-{i}", hold=True) for i in range(3)]
        disk.set_mode("fsync-eio")
        for i in range(5):
            assert_refused(await kiosk.post(f"during-{i}", hold=True))
        status, detail = await ready(c)
        assert (status, "I/O errors" in detail) == (503, True), detail
        disk.set_mode("ok")

        async def writable() -> bool:
            return (await ready(c))[0] == 200

        await eventually(writable, "ready again after fsync errors", timeout_s=20)
        after = [await kiosk.accept(f"during-{i}", hold=True) for i in range(5)]
        for i, job_id in enumerate(after):  # answered from the stored job: one job per key
            status, body, _, _ = await kiosk.post(f"during-{i}", hold=True)
            assert (status, body["id"]) == (200, job_id), body
        assert len(set(before + after)) == 8
        assert not run.dispatch_task.done()
    assert_intact(data_dir, kiosk)


@pytest.mark.parametrize("mode", ["fsync-eio", "erofs"])
async def test_store_alone_failing_keeps_an_unsure_document_until_the_store_tells(
    tmp_path: Path, disk: PowerFs, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Only the SQLite file fails (the spool is a symlink to a folder off the FUSE layer):
    the document is durable, the insert's COMMIT fails (with fsync-eio its WAL frames are
    written: the answer is unsure), so the document stays until a later commit settles it;
    the store's connections are opened again meanwhile; back to ok, the unsure document
    goes (its job was not kept) and the same key is accepted once."""
    data_dir = disk.mount / "data"
    data_dir.mkdir()
    outside = tmp_path / "spool-off-fuse"
    outside.mkdir()
    (data_dir / "spool").symlink_to(outside)
    caplog.set_level(logging.INFO, logger="edgeprint.store")
    async with appliance(config_dict(data_dir)) as (run, c):
        kiosk = Kiosk(c)
        before = [await kiosk.accept(f"before-{i:04d}", hold=True) for i in range(2)]
        disk.set_mode(mode)
        assert_refused(await kiosk.post("unsure-0001", hold=True))
        kept = {p.stem for p in outside.glob("*.pdf")} - set(before)
        assert len(kept) == 1  # the unsure job's document, kept while its commit is unsure
        status, detail = await ready(c)
        assert status == 503, detail

        def reopened() -> bool:
            return any(getattr(r, "event", "") == "store_reopen" for r in caplog.records)

        await eventually(reopened, "the store's connections opened again", timeout_s=20)
        disk.set_mode("ok")

        async def writable() -> bool:
            return (await ready(c))[0] == 200

        await eventually(writable, f"ready again after {mode}", timeout_s=20)
        assert not (outside / f"{kept.pop()}.pdf").exists()  # its job was not kept
        again = await kiosk.accept("unsure-0001", hold=True)
        assert again not in before
        assert not run.dispatch_task.done()
    assert_intact(data_dir, kiosk)


def test_read_only_disk_during_a_reload_loses_nothing(
    tmp_path: Path, disk: PowerFs, printers: Rig
) -> None:
    """SIGHUP while the data folder is read-only, removing a printer that has jobs waiting:
    the reload is applied and says the store failed while moving them; the move is tried
    again and done once the disk takes writes, the job in hand finishes there: every job
    prints once (the removed printer's worker claims nothing new, so without the second
    try its waiting jobs would wait for ever)."""
    printers.set_speed("printer-02", 1.0)  # holds its job long enough to be caught
    data_dir = disk.mount / "data"
    cfg = rig_config(data_dir, printers)
    cfg["server"]["port"] = 0
    smaller = copy.deepcopy(cfg)
    smaller["printers"] = smaller["printers"][:1]
    path = tmp_path / "config.toml"
    path.write_text(to_toml(cfg))
    server = ServeProcess(path, tmp_path / "serve.log")
    with server.start():
        url = server.url
        asyncio.run(_until_printer(url, "printer-02", "reachable"))
        ids = asyncio.run(_submit_aimed(url, "printer-02", 3))
        asyncio.run(_until_printer(url, "printer-02", "printing_job"))
        disk.set_mode("erofs")
        asyncio.run(_until_not_ready(url))
        path.write_text(to_toml(smaller))
        offset = server.log_path.stat().st_size
        assert server.proc is not None
        server.proc.send_signal(signal.SIGHUP)
        failed = _event(server, offset, "reload_store_failed")
        reloaded = _event(server, offset, "config_reloaded")
        assert reloaded["keys"] == ["printers"]
        assert "nothing was stored" in failed["error"], failed
        disk.set_mode("ok")
        late = _event(server, offset, "printer_retired_late")
        jobs = asyncio.run(_wait_all_done(url, ids))
        assert server.terminate() == 0
    on_02 = [j["id"] for j in jobs if j["printed_on"] == "printer-02"]
    assert len(on_02) >= 1  # the job in hand when the disk failed
    assert (late["printer"], late["moved"]) == ("printer-02", 3 - len(on_02))
    assert_each_printed_once(printers, ids)
    db = sqlite3.connect(f"file:{data_dir / DB_FILE}?mode=ro", uri=True)
    try:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert {r[0] for r in db.execute("SELECT id FROM jobs")} == set(ids)
    finally:
        db.close()


def _event(server: ServeProcess, offset: int, event: str) -> dict[str, Any]:
    def found() -> dict[str, Any] | None:
        for line in server.log_path.read_bytes()[offset:].splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict) and rec.get("event") == event:
                return rec
        return None

    return eventually_sync(found, lambda: f"{event} in the log:\n{server.tail()}", timeout_s=20)


async def _until_printer(url: str, printer: str, field: str) -> None:
    headers = {"Authorization": f"Bearer {TECH_TOKEN}"}
    async with aiohttp.ClientSession() as http:

        async def check() -> bool:
            async with http.get(f"{url}/v1/printers", headers=headers) as r:
                body = await r.json()
            return any(p["name"] == printer and p[field] for p in body["printers"])

        await eventually(check, f"{printer}'s {field}", timeout_s=20)


async def _submit_aimed(url: str, printer: str, n: int) -> list[str]:
    async with aiohttp.ClientSession() as http:
        c = Client(http, url)
        return [
            (await c.submit(f"aimed-{i:04d}", printer=printer, hold=False))["id"] for i in range(n)
        ]


async def _until_not_ready(url: str) -> None:
    async with aiohttp.ClientSession() as http:

        async def not_ready() -> bool:
            async with http.get(f"{url}/readyz") as r:
                return r.status == 503

        await eventually(not_ready, "/readyz 503 on the read-only disk", timeout_s=20)


async def _wait_all_done(url: str, ids: list[str]) -> list[dict[str, Any]]:
    async with aiohttp.ClientSession() as http:
        return await Client(http, url).wait_states(ids, {"DONE"}, timeout_s=60)
