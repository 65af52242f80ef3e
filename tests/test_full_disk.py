"""Full disk and unwritable store (DESIGN §6), on small filesystems made for each test.

New work is refused (507 ``storage-full`` or 503 ``store-unavailable``) with
nothing half-written, jobs already accepted keep printing (the
``server.min_free_bytes`` reserve leaves room for their state changes), reads
keep working and the appliance stays up. Each test mounts its own tmpfs (or,
for a read-only store, an ext4 image on a loop device) and unmounts it after:
root is needed; without it the tests skip, or fail when CI is set.

Findings these tests pin down:

- ``mount -o remount,ro`` of data_dir's filesystem while edgeprint runs is
  refused by the kernel (EBUSY: SQLite and the lock file are open for
  writing), so that is not a state the appliance can meet. What happens in the
  field is ext4 going read-only by itself after an I/O error
  (``errors=remount-ro``, Debian's default): every write, also on open files,
  fails with EROFS. That is simulated here with ext4's ``trigger_fs_error``.
  Coming back needs an unmount and fsck, so "writable again" means a restart.
- On such a read-only store a worker that must record a state change (a job
  printing when the disk went read-only) waits and retries (DESIGN §6, issue 27):
  the dispatcher stays up, ``/readyz`` says why, the API keeps answering reads.
  After the repair, reconciliation at start-up records the job DONE, printed
  once. A disk that comes back by itself (a FUSE layer that stops failing) is
  recovered from with no restart: tests/test_disk_faults.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import io
import json
import os
import sqlite3
import subprocess
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from edgeprint.config import parse_config
from edgeprint.server import DB_FILE, Running, running
from testbed.pdfs import make_pdf
from testbed.rig import Rig
from tests.conftest import KIOSK_TOKEN, config_dict
from tests.polling import eventually
from tests.printing import Client, assert_each_printed_once, rig_config
from tests.rig_fixtures import in_ci

STORAGE_FULL = "urn:edgeprint:problem:storage-full"
STORE_UNAVAILABLE = "urn:edgeprint:problem:store-unavailable"
KIB = 1024
MIB = 1024 * KIB
#: What each test keeps free on its small filesystem for accepted jobs (server.min_free_bytes).
RESERVE = 2 * MIB
PAGE = 4096


# --- small filesystems --------------------------------------------------------------


def _cannot(why: str) -> None:
    if in_ci():
        pytest.fail(f"{why}; CI is set, so this is a failure, not a skip", pytrace=False)
    pytest.skip(f"{why}; set CI=1 to make this a failure")


def _run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)


def _umount(mnt: Path) -> None:
    if _run("umount", str(mnt)).returncode != 0:
        _run("umount", "-l", str(mnt))  # something still holds it: detach, never leak a mount


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Any]:
    """Factory: ``tmpfs("8m")`` mounts a fresh tmpfs of that size and returns its path."""
    mounted: list[Path] = []

    def mount(size: str) -> Path:
        if os.geteuid() != 0:
            _cannot("mounting a tmpfs needs root")
        mnt = tmp_path / f"fs{len(mounted)}"
        mnt.mkdir()
        res = _run("mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(mnt))
        if res.returncode != 0:
            _cannot(f"cannot mount a tmpfs: {res.stderr.strip()}")
        mounted.append(mnt)
        return mnt

    try:
        yield mount
    finally:
        for mnt in reversed(mounted):
            _umount(mnt)


@dataclass
class Ext4:
    """An ext4 image on a loop device, mounted with errors=remount-ro."""

    image: Path
    mnt: Path

    def mount(self) -> None:
        res = _run("mount", "-o", "loop,errors=remount-ro", str(self.image), str(self.mnt))
        if res.returncode != 0:
            _cannot(f"cannot loop-mount an ext4 image: {res.stderr.strip()}")

    def device(self) -> str:
        return _run("findmnt", "-n", "-o", "SOURCE", str(self.mnt)).stdout.strip()

    def fail(self) -> None:
        """What an I/O error does to ext4 (errors=remount-ro): the filesystem turns read-only."""
        Path(f"/sys/fs/ext4/{Path(self.device()).name}/trigger_fs_error").write_text("test\n")
        with pytest.raises(OSError, match="Read-only file system"):
            (self.mnt / "probe").touch()

    def repair(self) -> None:
        """Unmount, fsck, mount again: the only way back to a writable filesystem."""
        _umount(self.mnt)
        res = _run("e2fsck", "-fy", str(self.image))
        assert res.returncode in (0, 1), res.stdout + res.stderr  # 1: errors corrected
        self.mount()


@pytest.fixture
def ext4(tmp_path: Path) -> Iterator[Ext4]:
    """A 16 MiB ext4 filesystem on a loop device, unmounted (and the device freed) after."""
    if os.geteuid() != 0:
        _cannot("loop-mounting a filesystem needs root")
    image, mnt = tmp_path / "ext4.img", tmp_path / "ext4"
    mnt.mkdir()
    with image.open("wb") as fh:
        fh.truncate(16 * MIB)
    res = _run("mkfs.ext4", "-q", "-F", str(image))
    if res.returncode != 0:
        _cannot(f"mkfs.ext4 failed (install e2fsprogs): {res.stderr.strip()}")
    fs = Ext4(image, mnt)
    fs.mount()
    try:
        yield fs
    finally:
        _umount(mnt)


def free_bytes(path: Path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def fill(path: Path, leave: int = 0) -> Path:
    """A ballast file that fills ``path``'s filesystem, then leaves ``leave`` bytes (pages)."""
    ballast = path / "ballast"
    fd = os.open(ballast, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for block in (MIB, PAGE):
            chunk = b"\0" * block
            while True:
                try:
                    os.write(fd, chunk)
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    break
        size = os.fstat(fd).st_size
        os.ftruncate(fd, size - leave)
    finally:
        os.close(fd)
    return ballast


# --- the appliance and its data ---------------------------------------------------------


@contextlib.asynccontextmanager
async def appliance(cfg: dict[str, Any]) -> AsyncIterator[tuple[Running, Client]]:
    async with running(parse_config(cfg)) as run, aiohttp.ClientSession() as http:
        yield run, Client(http, f"http://{run.host}:{run.port}")


@dataclass
class Answer:
    status: int
    body: dict[str, Any]
    content_type: str
    headers: dict[str, str]


async def post_job(c: Client, key: str, doc: bytes, **meta: Any) -> Answer:
    """POST /v1/jobs whatever the answer (Client.submit insists on success)."""
    form = aiohttp.FormData()
    form.add_field("metadata", json.dumps({"owner": "ann", "pool": "lobby", **meta}),
                   content_type="application/json")  # fmt: skip
    # A BytesIO: aiohttp warns (an error here) about large raw bytes bodies.
    form.add_field("document", io.BytesIO(doc), content_type="application/pdf", filename="b.pdf")
    headers = {"Authorization": f"Bearer {KIOSK_TOKEN}", "Idempotency-Key": key}
    async with c.http.post(f"{c.url}/v1/jobs", data=form, headers=headers) as r:
        return Answer(r.status, await r.json(content_type=None), r.content_type, dict(r.headers))


async def get(c: Client, path: str) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {KIOSK_TOKEN}"}
    async with c.http.get(f"{c.url}{path}", headers=headers) as r:
        return r.status, await r.json(content_type=None)


def assert_refused(a: Answer, status: int, type_: str) -> None:
    """A problem+json of this type whose detail says what to do (retry later)."""
    assert a.status == status, (a.status, a.body)
    assert a.content_type == "application/problem+json"
    assert a.body["type"] == type_, a.body
    if status == 507:
        assert "Idempotency-Key" in a.body["detail"], a.body
        assert "free space" in a.body["detail"], a.body
    else:
        assert "retry later" in a.body["detail"], a.body
        assert a.headers["Retry-After"] == "5"


def assert_nothing_half_written(data_dir: Path, job_ids: set[str]) -> None:
    """spool/tmp is empty, one document per job and none else, SQLite intact, these jobs only."""
    spool = data_dir / "spool"
    assert list((spool / "tmp").iterdir()) == []
    assert {p.stem for p in spool.glob("*.pdf")} == job_ids
    assert sorted(p.name for p in spool.iterdir() if p.suffix != ".pdf") == ["tmp"]
    db = sqlite3.connect(f"file:{data_dir / DB_FILE}?mode=ro", uri=True)
    try:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert {r[0] for r in db.execute("SELECT id FROM jobs")} == job_ids
    finally:
        db.close()


async def assert_reads_work(c: Client, job_ids: set[str]) -> None:
    for job_id in job_ids:
        status, job = await get(c, f"/v1/jobs/{job_id}")
        assert status == 200, job
    listed: set[str] = set()
    cursor = ""
    while True:
        status, page = await get(c, f"/v1/jobs?limit=500{cursor}")
        assert status == 200, page
        listed |= {j["id"] for j in page["jobs"]}
        if page["next_cursor"] is None:
            break
        cursor = f"&cursor={page['next_cursor']}"
    assert listed == job_ids
    async with c.http.get(f"{c.url}/healthz") as r:
        assert r.status == 200


async def fill_with_jobs(c: Client, doc_bytes: int, prefix: str) -> tuple[set[str], list[Answer]]:
    """Submit held jobs of ``doc_bytes`` until the first 507; the accepted ids and the 507."""
    accepted: set[str] = set()
    for i in range(1000):
        a = await post_job(c, f"{prefix}-{i:06d}", make_pdf(f"{prefix}{i}", pad_to=doc_bytes))
        if a.status != 201:
            assert_refused(a, 507, STORAGE_FULL)
            return accepted, [a]
        accepted.add(a.body["id"])
    raise AssertionError("the disk never filled up")


# --- 1. fill the disk --------------------------------------------------------------------


async def test_full_disk_refuses_new_work_with_nothing_half_written(tmpfs: Any) -> None:
    mnt = tmpfs("8m")
    data_dir = mnt / "data"
    ballast = mnt / "ballast"  # removed below: how the test makes room again
    ballast.write_bytes(b"\0" * 512 * KIB)
    async with appliance(config_dict(data_dir, min_free_bytes=RESERVE)) as (run, c):
        accepted, refused = await fill_with_jobs(c, 256 * KIB, "fill")
        assert len(accepted) >= 10
        assert "min_free_bytes" in refused[0].body["detail"]
        # The reserve holds: what is left is at least most of it (one document less than
        # it at most, since the last accepted document was checked after its last byte).
        assert free_bytes(mnt) >= RESERVE - 64 * KIB
        # More of the same, sequential and concurrent, small and large (the large one is
        # refused while it streams, after its first MiB): every one 507, none stored.
        big = make_pdf("big", pad_to=5 * MIB)
        more = [post_job(c, f"more-{i:06d}", make_pdf(f"m{i}", pad_to=512 * KIB)) for i in range(6)]
        answers = [await post_job(c, "more-big-1", big)]
        answers += await asyncio.gather(*more, post_job(c, "more-big-2", big))
        for a in answers:
            assert_refused(a, 507, STORAGE_FULL)
        assert_nothing_half_written(data_dir, accepted)
        await assert_reads_work(c, accepted)
        # The same key again, once there is room for its (small) document: accepted. (What
        # is left above the reserve after the fill is less than one filler document, and
        # the store's WAL may have taken it since: room is made explicitly.)
        ballast.unlink()
        small = await post_job(c, "more-000000", make_pdf("small"))
        assert small.status == 201, small.body
        accepted.add(small.body["id"])
        assert_nothing_half_written(data_dir, accepted)
        assert not run.dispatch_task.done()


async def test_readyz_reports_the_reserve(tmpfs: Any) -> None:
    mnt = tmpfs("8m")
    async with appliance(config_dict(mnt / "data", min_free_bytes=RESERVE)) as (_app, c):
        async with c.http.get(f"{c.url}/readyz") as r:
            assert r.status == 200
        ballast = fill(mnt, leave=RESERVE - 256 * KIB)
        async with c.http.get(f"{c.url}/readyz") as r:
            assert r.status == 503
            assert "full" in (await r.json())["detail"]
        assert_refused(await post_job(c, "key-reserve", make_pdf()), 507, STORAGE_FULL)
        ballast.unlink()
        async with c.http.get(f"{c.url}/readyz") as r:
            assert r.status == 200
        assert (await post_job(c, "key-reserve", make_pdf())).status == 201


# --- 2. jobs already accepted still print on a full disk -------------------------------


async def test_held_jobs_print_after_the_disk_filled(tmpfs: Any, printers: Rig) -> None:
    mnt = tmpfs("8m")
    data_dir = mnt / "data"
    cfg = rig_config(data_dir, printers)
    cfg["server"]["min_free_bytes"] = RESERVE
    async with appliance(cfg) as (run, c):
        held = [(await c.submit(f"held-{i:04d}", pool="lobby"))["id"] for i in range(6)]
        fillers, _ = await fill_with_jobs(c, 256 * KIB, "filler")
        for job_id in held:
            status, body = await c.post(f"/v1/jobs/{job_id}/release")
            assert status == 200, body
        jobs = await c.wait_states(held, {"DONE", "DEAD"}, timeout_s=60)
        assert {j["state"] for j in jobs} == {"DONE"}, jobs
        assert_each_printed_once(printers, held)
        assert_refused(await post_job(c, "after-print", make_pdf()), 507, STORAGE_FULL)
        assert_nothing_half_written(data_dir, set(held) | fillers)
        assert not run.dispatch_task.done()


# --- 3. a truly full filesystem (no reserve): ENOSPC at every write point ----------------


async def test_enospc_without_reserve_leaves_nothing_behind(
    tmpfs: Any, caplog: pytest.LogCaptureFixture
) -> None:
    mnt = tmpfs("4m")
    data_dir = mnt / "data"
    async with appliance(config_dict(data_dir, min_free_bytes=0)) as (run, c):
        accepted = {(await post_job(c, f"before-{i}", make_pdf(f"b{i}"))).body["id"]
                    for i in range(3)}  # fmt: skip
        doc = make_pdf("the one", pad_to=64 * KIB)

        # The spool cannot write the document at all.
        ballast = fill(mnt)
        assert free_bytes(mnt) == 0
        assert_refused(await post_job(c, "key-enospc-1", doc), 507, STORAGE_FULL)
        assert_nothing_half_written(data_dir, accepted)

        # Room for the document, none for SQLite's insert (its WAL must grow): the
        # document is written, the insert fails with SQLITE_FULL, the document goes.
        ballast.unlink()
        ballast = fill(mnt, leave=-(-len(doc) // PAGE) * PAGE)
        caplog.clear()
        assert_refused(await post_job(c, "key-enospc-1", doc), 507, STORAGE_FULL)
        failed = [r for r in caplog.records if getattr(r, "event", "") == "store_commit_failed"]
        assert failed, "the refusal was meant to come from SQLite's insert"
        assert "full" in getattr(failed[0], "error", "")
        assert_nothing_half_written(data_dir, accepted)
        await assert_reads_work(c, accepted)

        ballast.unlink()
        again = await post_job(c, "key-enospc-1", doc)
        assert again.status == 201, again.body
        accepted.add(again.body["id"])
        assert_nothing_half_written(data_dir, accepted)
        assert not run.dispatch_task.done()


# --- 4. a store that cannot be written -------------------------------------------------


async def test_remount_read_only_while_running_is_refused_by_the_kernel(tmpfs: Any) -> None:
    mnt = tmpfs("8m")
    async with appliance(config_dict(mnt / "data", min_free_bytes=RESERVE)) as (_app, c):
        first = await post_job(c, "key-before-ro", make_pdf())
        assert first.status == 201
        res = _run("mount", "-o", "remount,ro", str(mnt))
        assert res.returncode != 0, "remount,ro succeeded: the read-only test below needs a look"
        assert "busy" in res.stderr
        assert (await post_job(c, "key-after-ro", make_pdf("x"))).status == 201


async def test_read_only_store_refuses_work_and_keeps_reading(ext4: Ext4) -> None:
    data_dir = ext4.mnt / "data"
    cfg = config_dict(data_dir, min_free_bytes=RESERVE)
    async with appliance(cfg) as (run, c):
        accepted = {(await post_job(c, f"before-{i}", make_pdf(f"b{i}"))).body["id"]
                    for i in range(3)}  # fmt: skip
        # the config's printers do not answer: their health change (a row to record) comes
        # before the store fails, so that afterwards there is nothing to record
        await eventually(
            lambda: not any(s.healthy for s in run.dispatcher.snapshots()),
            "every printer shown unreachable",
        )
        ext4.fail()
        refused = await post_job(c, "key-while-ro", make_pdf("ro"))
        assert_refused(refused, 503, STORE_UNAVAILABLE)
        # A key that already has a job cannot be answered either (the upload is spooled first).
        assert_refused(await post_job(c, "before-0", make_pdf("b0")), 503, STORE_UNAVAILABLE)
        await assert_reads_work(c, accepted)
        status, body = await c.post(f"/v1/jobs/{sorted(accepted)[0]}/release")
        assert (status, body["type"]) == (503, STORE_UNAVAILABLE)
        async with c.http.get(f"{c.url}/readyz") as r:
            assert r.status == 503
            assert "read-only" in (await r.json())["detail"]
        async with c.http.get(f"{c.url}/metrics") as r:
            assert r.status == 200
        await asyncio.sleep(0.5)  # a window for a worker to fail in, not a synchronisation
        assert not run.dispatch_task.done()  # nothing to record: the workers stay up
        assert list((data_dir / "spool" / "tmp").iterdir()) == []

    ext4.repair()
    async with appliance(cfg) as (run, c):
        async with c.http.get(f"{c.url}/readyz") as r:
            assert r.status == 200
        again = await post_job(c, "key-while-ro", make_pdf("ro"))
        assert again.status == 201, again.body
        accepted.add(again.body["id"])
        assert_nothing_half_written(data_dir, accepted)
        await assert_reads_work(c, accepted)


async def test_read_only_store_while_printing_waits_for_the_disk(ext4: Ext4, printers: Rig) -> None:
    data_dir = ext4.mnt / "data"
    cfg = rig_config(data_dir, printers)
    cfg["server"]["min_free_bytes"] = RESERVE
    for p in printers:
        printers.set_speed(p.name, 1.5)
    async with appliance(cfg) as (run, c):
        job = await c.submit("key-printing", pool="lobby", hold=False)
        await c.wait_states([job["id"]], {"PRINTING"})
        ext4.fail()

        async def refused_writes() -> bool:
            async with c.http.get(f"{c.url}/metrics") as r:
                text = await r.text()
            return "edgeprint_store_writable 0.0" in text and 'kind="io"' in text

        # The printed copy's DONE cannot be recorded (SQLite says "disk I/O error"): the
        # worker waits, the dispatcher stays up; reads work and /readyz says why.
        await eventually(refused_writes, "the store shown refusing writes", timeout_s=30)
        assert (await c.job(job["id"]))["state"] == "PRINTING"
        async with c.http.get(f"{c.url}/readyz") as r:
            assert r.status == 503
            assert "read-only" in (await r.json())["detail"]
        async with c.http.get(f"{c.url}/healthz") as r:
            assert r.status == 200
        assert not run.dispatch_task.done()
    assert run.dispatch_task.done()
    assert run.dispatch_task.exception() is None

    ext4.repair()
    async with appliance(cfg) as (run, c):

        async def done() -> bool:
            return (await c.job(job["id"]))["state"] == "DONE"

        await eventually(done, "the job DONE after the repair", timeout_s=30)
        assert_each_printed_once(printers, [job["id"]])
        assert not run.dispatch_task.done()
