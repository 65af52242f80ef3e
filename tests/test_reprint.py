"""POST /v1/jobs/{id}/reprint, GET /v1/jobs/{id}/events and search in GET /v1/jobs (issue 24),
through a real appliance (real SQLite file, real HTTP on loopback).

A DONE job is made the way a technician makes one (a DEAD ``outcome_unknown`` job resolved
"printed"); printing on real printers is tests/test_reprint_printing.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
from collections.abc import Callable
from typing import Any

import pytest

from edgeprint.server import DB_FILE
from tests.conftest import KIOSK_TOKEN, TECH_TOKEN, Appliance
from tests.test_cli_tech import run_cli
from tests.test_resolve import dead_job

PROBLEM = "urn:edgeprint:problem:"


async def done_job(app: Appliance, key: str) -> dict[str, Any]:
    """A DONE job: parked DEAD outcome_unknown, then resolved printed by a technician."""
    job = await dead_job(app, key)
    resp = await app.post(f"/v1/jobs/{job['id']}/resolve", {"printed": True}, token=TECH_TOKEN)
    assert resp.status == 200
    return dict(await resp.json())


async def reprint(
    app: Appliance, job_id: str, body: Any = None, key: str | None = "reprint-key-01",
    token: str = KIOSK_TOKEN, raw: bytes | None = None,
) -> tuple[int, dict[str, Any], dict[str, str]]:  # fmt: skip
    headers = app.headers(token)
    if key is not None:
        headers["Idempotency-Key"] = key
    kw: dict[str, Any] = {"json": body} if raw is None else {"data": raw}
    if raw is not None:
        headers["Content-Type"] = "application/json"
    async with app.http.post(f"{app.url}/v1/jobs/{job_id}/reprint", headers=headers, **kw) as r:
        return r.status, await r.json(), dict(r.headers)


def db_rows(app: Appliance, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with sqlite3.connect(app.data_dir / DB_FILE) as db:
        return db.execute(sql, params).fetchall()


async def test_a_reprint_is_a_new_released_job_linked_both_ways(app: Appliance) -> None:
    original = await done_job(app, "orig-key-0001")
    status, new, headers = await reprint(app, original["id"], {"reason": "badge lost"})

    assert status == 201, new
    assert headers["Location"] == f"/v1/jobs/{new['id']}"
    assert new["id"] != original["id"]
    assert new["state"] == "RELEASED"
    assert new["reprint_of"] == original["id"]
    for field in ("owner", "printer", "pool", "priority", "copies", "document"):
        assert new[field] == original[field], field
    got = await (await app.get(f"/v1/jobs/{original['id']}")).json()
    assert got["reprints"] == [new["id"]]
    assert got["state"] == "DONE"
    listed = await (await app.get("/v1/jobs?state=DONE")).json()
    assert listed["jobs"][0]["reprints"] == [new["id"]]
    # the document is the same bytes, stored once (a hard link), one file per job
    spool = app.data_dir / "spool"
    a, b = (os.stat(spool / f"{i}.pdf") for i in (original["id"], new["id"]))
    assert (a.st_ino, a.st_nlink) == (b.st_ino, 2)
    # who asked and why, in both jobs' events
    [(actor, reason, to_state)] = db_rows(
        app, "SELECT actor, reason, to_state FROM job_events WHERE job_id = ?", (new["id"],)
    )
    assert (actor, to_state) == ("kiosk-1", "RELEASED")
    assert reason == f"reprint of {original['id']}: badge lost"
    last = db_rows(
        app, "SELECT actor, reason, from_state, to_state FROM job_events WHERE job_id = ? "
        "ORDER BY seq DESC LIMIT 1", (original["id"],),
    )  # fmt: skip
    assert last == [("kiosk-1", f"reprinted as {new['id']}: badge lost", "DONE", "DONE")]


async def test_the_same_key_answers_the_same_reprint_and_another_key_another(
    app: Appliance,
) -> None:
    original = await done_job(app, "orig-key-0002")
    _, first, _ = await reprint(app, original["id"], {"reason": "damaged"}, key="desk-key-0001")
    status, again, headers = await reprint(
        app, original["id"], {"reason": "damaged"}, key="desk-key-0001"
    )
    assert status == 200
    assert headers["Idempotent-Replayed"] == "true"
    assert again["id"] == first["id"]
    status, other, _ = await reprint(app, original["id"], {"reason": "damaged"}, key="desk-key-2")
    assert status == 201
    assert other["id"] != first["id"]
    # the same key for something else: refused, nothing stored
    before = app.snapshot()
    status, body, _ = await reprint(app, original["id"], {"reason": "lost"}, key="desk-key-0001")
    assert (status, body["type"]) == (422, PROBLEM + "idempotency-key-reused")
    status, body, _ = await reprint(app, original["id"], {"reason": "x"}, key="orig-key-0002")
    assert (status, body["type"], body["job_id"]) == (
        422, PROBLEM + "idempotency-key-reused", original["id"],
    )  # fmt: skip
    assert app.snapshot() == before
    got = await (await app.get(f"/v1/jobs/{original['id']}")).json()
    assert got["reprints"] == [first["id"], other["id"]]


async def test_concurrent_reprints_with_one_key_make_one_job(app: Appliance) -> None:
    original = await done_job(app, "orig-key-0003")
    answers = await asyncio.gather(
        *(reprint(app, original["id"], {"reason": "lost"}, key="one-desk-key") for _ in range(12))
    )
    assert sorted(s for s, _, _ in answers) == [200] * 11 + [201]
    assert len({b["id"] for _, b, _ in answers}) == 1
    count = db_rows(app, "SELECT count(*) FROM jobs WHERE reprint_of = ?", (original["id"],))
    assert count == [(1,)]
    assert len(list((app.data_dir / "spool").glob("*.pdf"))) == 2  # losers left no file


async def test_concurrent_reprints_with_distinct_keys_stop_at_the_limit(
    make_appliance: Callable[..., Any],
) -> None:
    async with make_appliance(sections={"release": {"max_reprints": 3}}) as app:
        original = await done_job(app, "orig-key-0004")
        answers = await asyncio.gather(
            *(reprint(app, original["id"], {"reason": "lost"}, key=f"many-keys-{i:03d}")
              for i in range(10))
        )  # fmt: skip
        assert sorted(s for s, _, _ in answers) == [201] * 3 + [409] * 7
        for status, body, _ in answers:
            if status == 409:
                assert body["type"] == PROBLEM + "reprint-limit"
                assert (body["count"], body["limit"], body["state"]) == (3, 3, "DONE")
        count = db_rows(app, "SELECT count(*) FROM jobs WHERE reprint_of = ?", (original["id"],))
        assert count == [(3,)]
        assert len(list((app.data_dir / "spool").glob("*.pdf"))) == 4


async def test_over_the_limit_is_409_with_the_count_and_nothing_changes(
    make_appliance: Callable[..., Any],
) -> None:
    async with make_appliance(sections={"release": {"max_reprints": 1}}) as app:
        original = await done_job(app, "orig-key-0005")
        status, _, _ = await reprint(app, original["id"], {"reason": "lost"}, key="limit-key-1")
        assert status == 201
        before = app.snapshot()
        status, body, _ = await reprint(app, original["id"], {"reason": "lost"}, key="limit-key-2")
        assert (status, body["type"], body["count"], body["limit"]) == (
            409, PROBLEM + "reprint-limit", 1, 1,
        )  # fmt: skip
        assert "reprinted 1 time(s)" in body["detail"]
        assert app.snapshot() == before


async def test_max_reprints_zero_allows_none(make_appliance: Callable[..., Any]) -> None:
    async with make_appliance(sections={"release": {"max_reprints": 0}}) as app:
        original = await done_job(app, "orig-key-0006")
        before = app.snapshot()
        status, body, _ = await reprint(app, original["id"], {"reason": "lost"})
        assert (status, body["type"], body["count"], body["limit"]) == (
            409, PROBLEM + "reprint-limit", 0, 0,
        )  # fmt: skip
        assert app.snapshot() == before


async def test_only_a_done_job_is_reprinted(app: Appliance) -> None:
    """HELD, RELEASED, DEAD (outcome unknown: it may not have printed) and CANCELLED: 409
    naming the state, nothing stored."""
    held = await (await app.submit(key="state-key-held")).json()
    dead = await dead_job(app, "state-key-dead")  # (claims printer-03's first released job)
    released = await (
        await app.submit({"owner": "ann", "printer": "printer-03", "hold": False},
                         key="state-key-released")
    ).json()  # fmt: skip
    cancelled = await (await app.submit(key="state-key-cancel")).json()
    assert (await app.post(f"/v1/jobs/{cancelled['id']}/cancel")).status == 200
    before = app.snapshot()
    for job, state in ((held, "HELD"), (released, "RELEASED"), (dead, "DEAD"),
                       (cancelled, "CANCELLED")):  # fmt: skip
        status, body, _ = await reprint(app, job["id"], {"reason": "lost"}, key=f"state-{state}")
        assert (status, body["type"], body["state"]) == (409, PROBLEM + "state-conflict", state)
        assert body["detail"] == f"cannot reprint job {job['id']}: it is {state}"
    assert app.snapshot() == before


@pytest.mark.parametrize(
    ("body", "raw", "loc"),
    [
        (None, None, "body"),
        ({}, None, "body.reason"),
        ({"reason": ""}, None, "body.reason"),
        ({"reason": "   "}, None, "body.reason"),
        ({"reason": "x" * 201}, None, "body.reason"),
        ({"reason": "lost\nfound"}, None, "body.reason"),
        ({"reason": 5}, None, "body.reason"),
        ({"reason": "lost", "extra": 1}, None, "body.extra"),
    ],
)
async def test_a_bad_reason_is_422_and_nothing_changes(
    app: Appliance, body: Any, raw: bytes | None, loc: str
) -> None:
    original = await done_job(app, "orig-key-0007")
    before = app.snapshot()
    status, problem, _ = await reprint(app, original["id"], body, raw=raw)
    assert (status, problem["type"]) == (422, PROBLEM + "invalid-request"), problem
    assert loc in [e["loc"] for e in problem["errors"]]
    assert app.snapshot() == before


async def test_missing_or_bad_key_json_and_unknown_job(app: Appliance) -> None:
    original = await done_job(app, "orig-key-0008")
    before = app.snapshot()
    status, body, _ = await reprint(app, original["id"], {"reason": "lost"}, key=None)
    assert (status, body["type"]) == (400, PROBLEM + "idempotency-key-missing")
    status, body, _ = await reprint(app, original["id"], {"reason": "lost"}, key="short")
    assert (status, body["type"]) == (400, PROBLEM + "idempotency-key-invalid")
    status, body, _ = await reprint(app, original["id"], raw=b'{"reason": ')
    assert (status, body["type"]) == (400, PROBLEM + "malformed-json")
    status, body, _ = await reprint(app, "f" * 32, {"reason": "lost"})
    assert (status, body["type"]) == (404, PROBLEM + "job-not-found")
    assert app.snapshot() == before


async def test_a_document_deleted_by_retention_is_410(app: Appliance) -> None:
    original = await done_job(app, "orig-key-0009")
    service = app.running.service
    await service.jobs.mark_documents_deleted([original["id"]], now=service.clock())
    service.spool.remove(original["id"])
    before = app.snapshot()
    status, body, _ = await reprint(app, original["id"], {"reason": "lost"})
    assert (status, body["type"], body["job_id"]) == (
        410,
        PROBLEM + "document-gone",
        original["id"],
    )
    assert app.snapshot() == before


async def test_the_webhook_outbox_gets_job_reprinted(make_appliance: Callable[..., Any]) -> None:
    hook = {"url": "http://127.0.0.1:9/hook", "events": ["job.reprinted"],
            "secret": "whsec_" + "MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0"}  # fmt: skip
    async with make_appliance(sections={"webhooks": [hook]}) as app:
        original = await done_job(app, "orig-key-0010")
        _, new, _ = await reprint(app, original["id"], {"reason": "misspelt, fixed"})
        rows = db_rows(app, "SELECT type, job_id, data FROM webhook_outbox")
        assert [(t, j) for t, j, _ in rows] == [("job.reprinted", new["id"])]
        assert '"reprint_of":"' + original["id"] in rows[0][2]
        assert '"reason":"misspelt, fixed"' in rows[0][2]


async def test_the_story_of_a_reprinted_job(app: Appliance) -> None:
    original = await done_job(app, "orig-key-0011")
    _, new, _ = await reprint(app, original["id"], {"reason": "badge lost"})
    story = await (await app.get(f"/v1/jobs/{original['id']}/events")).json()
    assert story["job"]["id"] == original["id"]
    assert story["job"]["reprints"] == [new["id"]]
    kinds = [(e["kind"], e["from_state"], e["to_state"]) for e in story["entries"]]
    assert kinds == [
        ("state", None, "RELEASED"),
        ("state", "RELEASED", "PRINTING"),
        ("state", "PRINTING", "DEAD"),
        ("state", "DEAD", "DONE"),
        ("note", "DONE", "DONE"),
    ]
    words = [e["words"] for e in story["entries"]]
    assert words[0] == "Accepted as RELEASED from kiosk-1"
    assert words[3].startswith("DEAD → DONE by tech-1 (resolved: printed")
    assert words[4] == f"kiosk-1: reprinted as {new['id']}: badge lost"
    times = [e["at"] for e in story["entries"]]
    assert times == sorted(times)
    mine = await (await app.get(f"/v1/jobs/{new['id']}/events")).json()
    assert mine["job"]["reprint_of"] == original["id"]
    assert [e["words"] for e in mine["entries"]] == [
        f"Accepted as RELEASED from kiosk-1 (reprint of {original['id']}: badge lost)"
    ]
    resp = await app.get(f"/v1/jobs/{'0' * 32}/events")
    assert (resp.status, (await resp.json())["type"]) == (404, PROBLEM + "job-not-found")


async def test_search_by_key_id_prefix_and_owner(app: Appliance) -> None:
    ann = await (await app.submit({"owner": "Ann Lee", "pool": "lobby"}, key="find-key-ann")).json()
    odd = await (await app.submit({"owner": "50%_off", "pool": "lobby"}, key="find-key-odd")).json()

    async def ids(query: str) -> list[str]:
        resp = await app.get(f"/v1/jobs?{query}")
        assert resp.status == 200, await resp.text()
        return [j["id"] for j in (await resp.json())["jobs"]]

    assert await ids("idempotency_key=find-key-ann") == [ann["id"]]
    assert await ids(f"id_prefix={odd['id'][:4]}") == [
        i for i in (odd["id"], ann["id"]) if i.startswith(odd["id"][:4])
    ]
    assert await ids(f"id_prefix={ann['id']}") == [ann["id"]]
    assert await ids("owner_contains=ANN") == [ann["id"]]
    assert await ids("owner_contains=%25_") == [odd["id"]]
    assert await ids("owner_contains=n_l") == []
    assert await ids("owner_contains=ann&idempotency_key=find-key-odd") == []


@pytest.mark.parametrize(
    ("query", "loc"),
    [
        ("id_prefix=abc", "query.id_prefix"),
        ("id_prefix=ABCD", "query.id_prefix"),
        ("id_prefix=zzzz", "query.id_prefix"),
        ("id_prefix=" + "a" * 33, "query.id_prefix"),
        ("idempotency_key=short", "query.idempotency_key"),
        ("idempotency_key=has%20space1", "query.idempotency_key"),
        ("owner_contains=", "query.owner_contains"),
        ("owner_contains=a%0Ab", "query.owner_contains"),
        ("owner_contains=a&owner_contains=b", "query.owner_contains"),
    ],
)
async def test_bad_search_values_are_422(app: Appliance, query: str, loc: str) -> None:
    resp = await app.get(f"/v1/jobs?{query}")
    body = await resp.json()
    assert (resp.status, body["type"]) == (422, PROBLEM + "invalid-request")
    assert [e["loc"] for e in body["errors"]] == [loc]


async def test_the_cli_reprints_once_per_key_and_says_the_key(
    app: Appliance, capsys: pytest.CaptureFixture[str]
) -> None:
    """``edgeprint reprint ID --reason …`` with a kiosk token: a new reprint each run, the
    same one again with ``--key``; a job that is not DONE: exit 1 and the API's words."""
    original = await done_job(app, "orig-key-0012")
    url = ["--url", app.url]
    code, out, err = await run_cli(
        capsys, "reprint", original["id"], "--reason", "badge lost", *url, token=KIOSK_TOKEN
    )
    assert (code, err) == (0, "")
    [new_id] = [r[0] for r in db_rows(app, "SELECT id FROM jobs WHERE reprint_of = ?",
                                      (original["id"],))]  # fmt: skip
    lines = out.splitlines()
    assert lines[0] == f"reprint of {original['id']}: job {new_id}, RELEASED, for printer-03"
    key = lines[1].rsplit(" ", 1)[1]
    assert db_rows(app, "SELECT idempotency_key FROM jobs WHERE id = ?", (new_id,)) == [(key,)]
    code, out, _ = await run_cli(
        capsys, "reprint", original["id"], "--reason", "badge lost", "--key", key, "--json", *url,
        token=KIOSK_TOKEN,
    )  # fmt: skip
    assert code == 0
    assert json.loads(out)["id"] == new_id
    assert db_rows(app, "SELECT count(*) FROM jobs WHERE reprint_of = ?", (original["id"],)) == [
        (1,)
    ]
    held = await (await app.submit(key="cli-held-key")).json()
    code, out, err = await run_cli(
        capsys, "reprint", held["id"], "--reason", "lost", *url, token=KIOSK_TOKEN
    )
    assert (code, out) == (1, "")
    assert f"cannot reprint job {held['id']}: it is HELD" in err
    code, _, err = await run_cli(capsys, "reprint", original["id"], "--reason", " ", *url)
    assert code == 2
    assert "1-200 characters, not blank" in err


async def test_the_cli_searches_jobs(app: Appliance, capsys: pytest.CaptureFixture[str]) -> None:
    ann = await (await app.submit({"owner": "Ann Lee", "pool": "lobby"}, key="cli-find-ann")).json()
    await app.submit({"owner": "Bob", "pool": "lobby"}, key="cli-find-bob")
    url = ["--url", app.url, "--json"]
    for option in (["--key", "cli-find-ann"], ["--id-prefix", ann["id"][:6]],
                   ["--owner-contains", "ANN"]):  # fmt: skip
        code, out, err = await run_cli(capsys, "jobs", *option, *url, token=KIOSK_TOKEN)
        assert (code, err) == (0, "")
        assert [j["id"] for j in json.loads(out)["jobs"]] == [ann["id"]], option
    code, _, err = await run_cli(capsys, "jobs", "--id-prefix", "ABC", *url)
    assert code == 2
    assert "4-32 lowercase hex" in err
