"""The release credentials' lookup key lives outside the SQLite database (issue 24): a 0600
file in data_dir, so a copy of the database alone gives no code away. A key stored in the
database before is adopted and deleted; a database without its key file, or with another
one, is refused with 503 and nothing changes. Real appliance, real HTTP, real files."""

from __future__ import annotations

import asyncio
import hmac
import sqlite3
import stat
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psycopg

from edgeprint.server import DB_FILE
from edgeprint.service import release_key
from tests.conftest import Appliance
from tests.test_release_api import _at, _credentials, _held, _put

PROBLEM = "urn:edgeprint:problem:"
CODE = "48213907"


def _every_six_digit_code(key: bytes, lookup: str) -> str | None:
    """The 6-digit code whose lookup digest is ``lookup`` under ``key``, by trying them all."""
    target = bytes.fromhex(lookup)
    for n in range(10**6):
        value = f"{n:06d}".encode()
        if hmac.digest(key, value, "sha256") == target:
            return value.decode()
    return None


def _key_file(app: Appliance) -> Path:
    return app.data_dir / release_key.KEY_FILE


def _db(app: Appliance, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with sqlite3.connect(app.data_dir / DB_FILE) as db:
        return db.execute(sql, params).fetchall()


async def _opens(app: Appliance, code: str, job: str) -> None:
    status, found = await _at(app, "printer-03", "lookup", {"code": code})
    assert status == 200, found
    assert [j["id"] for j in found["jobs"]] == [job]


async def test_the_key_is_a_0600_file_and_the_database_alone_gives_nothing(
    make_appliance: Callable[..., Any],
) -> None:
    async with make_appliance() as app:
        status, _ = await _put(app, "ann", {"release_code": "582039"})
        assert status == 200
        job = await _held(app, "ann", "key-file-0001")
        await _opens(app, "582039", job)
        path = _key_file(app)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        key = path.read_text()
        assert len(key) == 65
        assert key.endswith("\n")
        assert _db(app, "SELECT count(*) FROM release_key") == [(0,)]
        [(lookup,)] = _db(app, "SELECT lookup FROM owner_credentials WHERE owner = 'ann'")
    # the database holds no key to try guesses against (a 6-digit code: 10^6 HMACs, about
    # a second, with it); the file is that key
    found = await asyncio.to_thread(_every_six_digit_code, bytes.fromhex(key.strip()), lookup)
    assert found == "582039"


async def test_a_key_stored_in_the_database_before_is_adopted_then_deleted(
    make_appliance: Callable[..., Any],
) -> None:
    """A store from before: its key in ``release_key``, no file. The codes set under it
    still open; the key is written to the file and deleted from the database."""
    async with make_appliance() as app:
        await _put(app, "ann", {"release_code": CODE})
        job = await _held(app, "ann", "key-adopt-0001")
        old_key = _key_file(app).read_text().strip()
    # as the store looked before: the key in its row, no file
    _key_file(app).unlink()
    _db(app, "INSERT INTO release_key (id, key, created_at) VALUES (1, ?, 1.0)", (old_key,))
    async with make_appliance() as app:
        await _opens(app, CODE, job)
        assert _key_file(app).read_text().strip() == old_key
        assert stat.S_IMODE(_key_file(app).stat().st_mode) == 0o600
        assert _db(app, "SELECT count(*) FROM release_key") == [(0,)]
    async with make_appliance() as app:  # and again, from the file alone
        await _opens(app, CODE, job)


async def test_a_database_without_its_key_file_is_refused_and_nothing_changes(
    make_appliance: Callable[..., Any],
) -> None:
    """Credentials exist, the key file is gone (a database restored alone): no new key is
    made (it would make every code wrong); look-up and PUT answer 503 release-key-missing,
    nothing is stored; a job's PIN still works; removing the owners' credentials lets new
    ones be set."""
    async with make_appliance() as app:
        await _put(app, "ann", {"release_code": CODE})
        job = await _held(app, "ann", "key-gone-0001")
        pinned = await _held(app, "cy", "key-gone-0002", release_pin="739164")
    _key_file(app).unlink()
    async with make_appliance() as app:
        before = _credentials(app)
        status, problem = await _at(app, "printer-03", "lookup", {"code": CODE})
        assert (status, problem["type"]) == (503, PROBLEM + "release-key-missing")
        assert "restore it from the backup" in problem["detail"]
        status, problem = await _put(app, "bob", {"release_code": "11223344"})
        assert (status, problem["type"]) == (503, PROBLEM + "release-key-missing")
        assert _credentials(app) == before
        assert not _key_file(app).exists()
        assert (await (await app.get(f"/v1/jobs/{job}")).json())["state"] == "HELD"
        # a job's PIN needs no key: it still opens and releases its job
        body = {"pin": "739164", "job": pinned, "all": True}
        status, out = await _at(app, "printer-03", "print", body)
        assert (status, out["message"]) == (200, "1 job sent to printer-03"), out
        # the way out without the file: remove the credentials, set new ones
        resp = await app.http.delete(f"{app.url}/v1/owners/ann", headers=app.headers())
        assert resp.status == 204
        status, _ = await _put(app, "ann", {"release_code": CODE})
        assert status == 200
        await _opens(app, CODE, job)
        assert _key_file(app).is_file()


async def test_a_key_file_that_disagrees_or_is_no_key_is_refused(
    make_appliance: Callable[..., Any],
) -> None:
    async with make_appliance() as app:
        await _put(app, "ann", {"release_code": CODE})
    path = _key_file(app)
    good = path.read_text()
    for bad, words in (("0" * 64, "another key than the database"), ("not a key", "64 lowercase")):
        path.write_text(bad)
        rows = [] if bad == "not a key" else [(1, "f" * 64)]
        for row in rows:  # the file and an old row disagree
            _db(app, "INSERT INTO release_key (id, key, created_at) VALUES (?, ?, 1.0)", row)
        async with make_appliance() as app:
            before = _credentials(app)
            status, problem = await _at(app, "printer-03", "lookup", {"code": CODE})
            assert (status, problem["type"]) == (503, PROBLEM + "release-key-missing"), bad
            assert words in problem["detail"]
            assert _credentials(app) == before
            assert _db(app, "SELECT key FROM release_key") == [(k,) for _, k in rows]
        assert path.read_text() == bad  # never overwritten
        _db(app, "DELETE FROM release_key")
    path.write_text(good)
    async with make_appliance() as app:
        status, _ = await _at(app, "printer-03", "lookup", {"code": CODE})
        assert status == 200


def test_concurrent_writers_of_a_new_key_file_agree(tmp_path: Path) -> None:
    """Of writers racing to make the file, one key wins and every one returns it: none
    ever reads a file half-written; no private file is left behind (20 races)."""
    keys = [f"{i:064x}" for i in range(8)]
    with ThreadPoolExecutor(8) as pool:
        for n in range(20):
            folder = tmp_path / f"race-{n}"
            folder.mkdir()
            path = folder / release_key.KEY_FILE
            got = list(pool.map(lambda k, p=path: release_key._write(p, k), keys))
            assert len(set(got)) == 1
            assert got[0] in keys
            assert path.read_text() == got[0] + "\n"
            assert [p.name for p in folder.iterdir()] == [release_key.KEY_FILE]


async def test_with_postgresql_the_key_stays_in_the_shared_database(
    make_appliance: Callable[..., Any], pg_url: str
) -> None:
    """Every appliance of a shared PostgreSQL store needs the same key: it stays in the
    database's row (DESIGN says what that costs), and no key file is made."""
    async with make_appliance(sections={"store": {"url": pg_url}}) as app:
        status, _ = await _put(app, "ann", {"release_code": CODE})
        assert status == 200
        status, found = await _at(app, "printer-03", "lookup", {"code": CODE})
        assert (status, found["jobs"]) == (200, [])
        assert not _key_file(app).exists()
    with psycopg.connect(pg_url) as conn:
        [(count,)] = conn.execute("SELECT count(*) FROM release_key").fetchall()
    assert count == 1
