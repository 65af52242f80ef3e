"""Release where you stand (issue 24), over real HTTP against a real appliance (SQLite file):
owners' codes and cards, the release page's look-up and print, lockout per client address,
the station role, and every bad input answered exactly with nothing changed."""

from __future__ import annotations

import asyncio
import collections
import itertools
import sqlite3
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from edgeprint import errors
from edgeprint.api.auth import token_digest
from edgeprint.config import parse_config
from edgeprint.server import DB_FILE
from testbed.pdfs import make_pdf
from testbed.rig import Rig
from tests.conftest import KIOSK_TOKEN, TECH_TOKEN, Appliance, config_dict
from tests.printing import appliance, assert_each_printed_once, printed_names, rig_config

PROBLEM = "urn:edgeprint:problem:"
CODE = "48213907"
CARD = "0004127733"
STATION_TOKEN = "station-token-for-tests"
PIN = "739164"


def _station_sections(tmp: Any = None) -> dict[str, Any]:
    tokens = config_dict(tmp or __import__("pathlib").Path("/nonexistent"))["tokens"]
    return {
        "tokens": [
            *tokens,
            {"name": "station-3", "role": "station", "sha256": token_digest(STATION_TOKEN),
             "printers": ["printer-03", "lobby"]},
        ]
    }  # fmt: skip


async def _put(app: Appliance, owner: str, body: Any, token: str = KIOSK_TOKEN) -> Any:
    resp = await app.http.put(f"{app.url}/v1/owners/{owner}", json=body, headers=app.headers(token))
    return resp.status, await resp.json(content_type=None)


async def _at(
    app: Appliance, name: str, verb: str, body: Any, token: str | None = None, raw: bool = False
) -> Any:
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    resp = await app.http.post(f"{app.url}/release/{name}/{verb}", json=body, headers=headers)
    data = await resp.read()
    if raw:
        return resp.status, data, resp.headers
    return resp.status, await resp.json(content_type=None)


def _credentials(app: Appliance) -> list[tuple[Any, ...]]:
    with sqlite3.connect(app.data_dir / DB_FILE) as db:
        return db.execute(
            "SELECT owner, kind, lookup, hash FROM owner_credentials ORDER BY owner, kind"
        ).fetchall()


async def _held(app: Appliance, owner: str, key: str, **meta: Any) -> str:
    resp = await app.submit({"owner": owner, "printer": "printer-03", **meta}, make_pdf(key),
                            key=key)  # fmt: skip
    assert resp.status == 201, await resp.text()
    return str((await resp.json())["id"])


async def test_credentials_are_stored_only_as_hashes_and_removed(
    make_appliance: Callable[..., Any],
) -> None:
    async with make_appliance() as app:
        status, body = await _put(app, "ann", {"release_code": CODE, "card": CARD})
        assert (status, body) == (200, {"owner": "ann", "release_code": True, "card": True})
        rows = _credentials(app)
        assert [r[:2] for r in rows] == [("ann", "card"), ("ann", "code")]
        for _, _, lookup, hashed in rows:
            assert len(lookup) == 64
            assert int(lookup, 16) >= 0
            assert hashed.startswith("scrypt$16384$8$1$")
        for path in app.data_dir.rglob("*"):
            if path.is_file():
                data = path.read_bytes()
                assert CODE.encode() not in data, path
                assert CARD.encode() not in data, path
        # a kind not given is kept; a new code replaces the old one
        status, body = await _put(app, "ann", {"release_code": "55550000"})
        assert (status, body["card"], body["release_code"]) == (200, True, True)
        status, _ = await _at(app, "printer-03", "lookup", {"code": CODE})
        assert status == 403
        status, found = await _at(app, "printer-03", "lookup", {"code": "55550000"})
        assert (status, found["owner"]) == (200, "ann")
        resp = await app.http.delete(f"{app.url}/v1/owners/ann", headers=app.headers())
        assert resp.status == 204
        assert _credentials(app) == []
        resp = await app.http.delete(f"{app.url}/v1/owners/ann", headers=app.headers())
        problem = await resp.json(content_type=None)
        assert (resp.status, problem["type"]) == (404, PROBLEM + "owner-not-found")


async def test_bad_credentials_are_refused_and_nothing_changes(
    make_appliance: Callable[..., Any],
) -> None:
    async with make_appliance(sections=_station_sections()) as app:
        assert (await _put(app, "ann", {"release_code": CODE}))[0] == 200
        before = _credentials(app)
        cases: list[tuple[Any, int, str]] = [
            ({"release_code": "12345"}, 422, "invalid-request"),  # too short
            ({"release_code": "1234567890123"}, 422, "invalid-request"),  # too long
            ({"release_code": "12ab56"}, 422, "invalid-request"),
            ({"release_code": 123456}, 422, "invalid-request"),  # not a string
            ({"card": "has space"}, 422, "invalid-request"),
            ({}, 422, "invalid-request"),
            ({"release_code": "123456", "card": "123456"}, 422, "invalid-request"),
            ({"release_code": "123456", "extra": 1}, 422, "invalid-request"),
        ]
        for body, status, slug in cases:
            got, problem = await _put(app, "bob", body)
            assert (got, problem["type"]) == (status, PROBLEM + slug), body
        resp = await app.http.put(
            f"{app.url}/v1/owners/bob", data=b"{not json", headers=app.headers(
                **{"Content-Type": "application/json"}),
        )  # fmt: skip
        problem = await resp.json(content_type=None)
        assert (resp.status, problem["type"]) == (400, PROBLEM + "malformed-json")
        resp = await app.http.put(f"{app.url}/v1/owners/bob", headers=app.headers())
        assert resp.status == 422
        # the same value as another owner's, as a code or as a card: 409, nothing revealed
        for body in ({"release_code": CODE}, {"card": CODE}, {"release_code": "99990000",
                                                              "card": CODE}):  # fmt: skip
            status, problem = await _put(app, "bob", body)
            assert (status, problem["type"]) == (409, PROBLEM + "credential-taken")
            assert "ann" not in problem["detail"]
        # one namespace within an owner too: ann's card may not be her own code
        status, problem = await _put(app, "ann", {"card": CODE})
        assert (status, problem["type"]) == (409, PROBLEM + "credential-taken")
        # no token, a station's token: refused
        resp = await app.http.put(f"{app.url}/v1/owners/bob", json={"release_code": "99990000"})
        assert resp.status == 401
        status, problem = await _put(app, "bob", {"release_code": "99990000"}, STATION_TOKEN)
        assert (status, problem["type"]) == (403, PROBLEM + "forbidden")
        assert _credentials(app) == before


async def test_concurrent_puts_of_one_value_give_it_to_one_owner(
    make_appliance: Callable[..., Any],
) -> None:
    async with make_appliance() as app:
        owners = [f"owner-{i}" for i in range(8)]
        results = await asyncio.gather(*(_put(app, o, {"card": CARD}) for o in owners))
        statuses = collections.Counter(s for s, _ in results)
        assert statuses == {200: 1, 409: 7}
        assert len(_credentials(app)) == 1


async def test_lookup_lists_the_persons_held_jobs_only(make_appliance: Callable[..., Any]) -> None:
    async with make_appliance() as app:
        await _put(app, "ann", {"release_code": CODE, "card": CARD})
        await _put(app, "bob", {"release_code": "11112222"})
        first = await _held(app, "ann", "ann-key-0001")
        second = await _held(app, "ann", "ann-key-0002")
        await _held(app, "carl", "carl-key-001")
        released = await app.submit(
            {"owner": "ann", "printer": "printer-03", "hold": False}, key="ann-key-0003"
        )
        assert released.status == 201
        for body in ({"code": CODE}, {"card": CODE}, {"code": CARD}, {"card": f" {CARD} "}):
            status, found = await _at(app, "printer-03", "lookup", body)
            assert status == 200, found
            assert [j["id"] for j in found["jobs"]] == [second, first]
            assert found["owner"] == "ann"
            assert found["message"] == "2 jobs waiting for you"
            assert found["kind"] == "printer"
            # (no printer answers here: whether printer-03 is ready depends on its probe)
            assert [(p["name"], p["waiting"]) for p in found["printers"]] == [("printer-03", 1)]
        job = found["jobs"][0]
        assert (job["pages"], job["copies"], job["has_preview"], job["pin_required"]) == (
            1, 1, True, False,
        )  # fmt: skip
        assert job["created_at"].endswith("Z")
        # a right code with nothing waiting: 200, an empty list, said plainly
        status, found = await _at(app, "lobby", "lookup", {"code": "11112222"})
        assert (status, found["jobs"], found["message"]) == (200, [], "Nothing is waiting for you")
        assert found["kind"] == "pool"
        assert [p["name"] for p in found["printers"]] == ["printer-01", "printer-02"]


async def test_a_wrong_credential_answers_the_same_bytes_whoever_exists(
    make_appliance: Callable[..., Any],
) -> None:
    sections = {"release": {"max_pin_failures": 20, "pin_lockout_s": 300}}
    async with make_appliance(sections=sections) as app:
        await _put(app, "ann", {"release_code": CODE})
        job = await _held(app, "ann", "pin-key-0001", release_pin=PIN)
        before = app.snapshot()
        answers = [
            await _at(app, "printer-03", "lookup", body, raw=True)
            for body in (
                {"code": CODE[:-1] + "0"},  # no such code (ann exists, another code)
                {"code": "31415926"},  # no such owner at all
                {"card": "nobody-card"},
                {"pin": "000000", "job": job},  # the job exists, wrong PIN
                {"pin": PIN, "job": "f" * 32},  # no such job
                {"pin": PIN, "job": "not-an-id"},
            )
        ]
        for status, data, headers in answers:
            assert status == 403
            assert headers["Content-Type"] == "application/problem+json"
            assert data == answers[0][1]
        assert b"credential-invalid" in answers[0][1]
        # /print answers alike, and releases nothing
        status, data, _ = await _at(
            app, "printer-03", "print", {"code": "31415926", "all": True}, raw=True
        )
        assert (status, data) == (403, answers[0][1])
        after = app.snapshot()
        assert after["spool"] == before["spool"]
        assert [r[4] for r in after["jobs"]] == [r[4] for r in before["jobs"]]  # states


async def test_wrong_credentials_lock_the_address_out(make_appliance: Callable[..., Any]) -> None:
    sections = {"release": {"max_pin_failures": 3, "pin_lockout_s": 300}}
    async with make_appliance(sections=sections) as app:
        await _put(app, "ann", {"release_code": CODE})
        job = await _held(app, "ann", "lock-key-001")
        for guess in ("10000001", "10000002", "10000003"):
            status, problem = await _at(app, "printer-03", "lookup", {"code": guess})
            assert (status, problem["type"]) == (403, PROBLEM + "credential-invalid")
        # locked: even the right code waits, and says how long; nothing is released
        status, data, headers = await _at(
            app, "printer-03", "print", {"code": CODE, "all": True}, raw=True
        )
        assert status == 429
        assert b"release-locked" in data
        assert 290 <= int(headers["Retry-After"]) <= 300
        assert (await (await app.get(f"/v1/jobs/{job}")).json())["state"] == "HELD"


async def test_parallel_guesses_cannot_outrun_the_address_lock(
    make_appliance: Callable[..., Any],
) -> None:
    sections = {"release": {"max_pin_failures": 4, "pin_lockout_s": 300}}
    async with make_appliance(sections=sections) as app:
        await _put(app, "ann", {"release_code": CODE})
        guesses = [f"{20000000 + i}" for i in range(30)]
        results = await asyncio.gather(
            *(_at(app, "printer-03", "lookup", {"code": g}) for g in guesses)
        )
        kinds = collections.Counter((s, p["type"]) for s, p in results)
        assert kinds == {
            (403, PROBLEM + "credential-invalid"): 4,
            (429, PROBLEM + "release-locked"): 26,
        }


async def test_a_right_credential_does_not_wipe_wrong_guesses(
    make_appliance: Callable[..., Any],
) -> None:
    """The finding's attack: wrong guesses with one's own valid code between them (4 wrong,
    1 right, repeated). A right code gives back only its own try, so the guesser gets no
    more wrong guesses per window than one without a code: the tries are counted before
    the check and the max_pin_failures-th locks; after it, every try is 429."""
    sections = {"release": {"max_pin_failures": 5, "pin_lockout_s": 300}}
    async with make_appliance(sections=sections) as app:
        await _put(app, "ann", {"release_code": CODE})
        answers: list[tuple[str, int]] = []
        guesses = (f"{30000000 + i}" for i in range(100))
        for _ in range(4):
            for _ in range(4):
                status, _ = await _at(app, "printer-03", "lookup", {"code": next(guesses)})
                answers.append(("wrong", status))
            answers.append(("right", (await _at(app, "printer-03", "lookup", {"code": CODE}))[0]))
        # 4 wrong, the right code (served), then the 5th wrong one locks: nothing more
        assert answers[:6] == [("wrong", 403)] * 4 + [("right", 200), ("wrong", 403)]
        assert {status for _, status in answers[6:]} == {429}
        assert sum(a == ("wrong", 403) for a in answers) == 5  # = max_pin_failures
        status, data, headers = await _at(app, "printer-03", "lookup", {"code": CODE}, raw=True)
        assert (status, b"release-locked" in data) == (429, True)
        assert 290 <= int(headers["Retry-After"]) <= 300


async def test_a_mistype_then_the_right_code_is_not_locked(
    make_appliance: Callable[..., Any],
) -> None:
    sections = {"release": {"max_pin_failures": 2, "pin_lockout_s": 300}}
    async with make_appliance(sections=sections) as app:
        await _put(app, "ann", {"release_code": CODE})
        assert (await _at(app, "printer-03", "lookup", {"code": "10000001"}))[0] == 403
        for _ in range(3):  # the right code, again and again: never locked by itself
            assert (await _at(app, "printer-03", "lookup", {"code": CODE}))[0] == 200
        # (and the mistype still counts: one more wrong one locks)
        assert (await _at(app, "printer-03", "lookup", {"code": "10000002"}))[0] == 403
        assert (await _at(app, "printer-03", "lookup", {"code": CODE}))[0] == 429


async def test_wrong_tries_age_out_after_the_lockout(make_appliance: Callable[..., Any]) -> None:
    sections = {"release": {"max_pin_failures": 3, "pin_lockout_s": 300}}
    async with make_appliance(sections=sections) as app:
        await _put(app, "ann", {"release_code": CODE})
        service = app.running.service
        start = service.run()
        now = [start]
        service.run = lambda: now[0]  # a lockout counts running time (issue 27): driven here
        for guess in ("10000001", "10000002"):
            assert (await _at(app, "printer-03", "lookup", {"code": guess}))[0] == 403
        now[0] = start + 299  # not yet: the third wrong one locks
        assert (await _at(app, "printer-03", "lookup", {"code": "10000003"}))[0] == 403
        assert (await _at(app, "printer-03", "lookup", {"code": CODE}))[0] == 429
        now[0] = start + 299 + 301  # the lock ended: afresh
        for guess in ("10000004", "10000005"):
            assert (await _at(app, "printer-03", "lookup", {"code": guess}))[0] == 403
        now[0] += 301  # the last wrong one is older than pin_lockout_s: afresh, two more
        for guess in ("10000006", "10000007"):
            assert (await _at(app, "printer-03", "lookup", {"code": guess}))[0] == 403
        assert (await _at(app, "printer-03", "lookup", {"code": CODE}))[0] == 200


async def test_print_releases_the_persons_jobs_here_once(
    make_appliance: Callable[..., Any],
) -> None:
    async with make_appliance() as app:
        await _put(app, "ann", {"release_code": CODE})
        mine = [await _held(app, "ann", f"ann-key-000{i}") for i in range(3)]
        other = await _held(app, "carl", "carl-key-001")
        before = app.snapshot()
        for bad in ("junk", mine[0].upper(), mine[0][:6]):  # not an id: 422, nothing done
            body = {"code": CODE, "jobs": [mine[0], bad]}
            status, problem = await _at(app, "printer-03", "print", body)
            assert (status, problem["type"]) == (422, PROBLEM + "invalid-request"), bad
            assert problem["errors"][0]["loc"] == "body.jobs.1"
        assert app.snapshot() == before
        body = {"code": CODE, "jobs": [mine[0], other, "0" * 32]}
        status, out = await _at(app, "printer-03", "print", body)
        assert status == 200, out
        assert [(o["job"], o["outcome"]) for o in out["outcomes"]] == [
            (mine[0], "released"), (other, "not-found"), ("0" * 32, "not-found"),
        ]  # fmt: skip
        assert (out["outcomes"][0]["printer"], out["outcomes"][0]["pool"]) == ("printer-03", None)
        assert out["message"] == "1 job sent to printer-03; 2 jobs not waiting any more"
        assert (await (await app.get(f"/v1/jobs/{other}")).json())["state"] == "HELD"
        # again: the one already sent is a conflict naming its state
        status, out = await _at(app, "printer-03", "print", {"code": CODE, "jobs": [mine[0]]})
        assert out["outcomes"] == [
            {"job": mine[0], "outcome": "conflict", "state": "RELEASED", "printer": None,
             "pool": None, "detail": None}
        ]  # fmt: skip
        assert out["message"] == "Already sent: 1 job"
        # all: the rest, to a pool's chosen printer
        status, out = await _at(
            app, "lobby", "print", {"code": CODE, "all": True, "printer": "printer-02"}
        )
        assert status == 200
        assert sorted(o["job"] for o in out["outcomes"]) == sorted(mine[1:])
        assert {(o["printer"], o["pool"]) for o in out["outcomes"]} == {("printer-02", "lobby")}
        assert out["message"] == "2 jobs sent to printer-02"
        for job_id in mine[1:]:
            job = await (await app.get(f"/v1/jobs/{job_id}")).json()
            assert (job["state"], job["printer"]) == ("RELEASED", "printer-02")
        events = await app.running.service.jobs.events(mine[1])
        assert events[-1].actor == "release-page:127.0.0.1"
        # nothing left: the sentence says so
        status, out = await _at(app, "printer-03", "print", {"code": CODE, "all": True})
        assert (status, out["outcomes"], out["message"]) == (
            200, [], "Nothing is waiting for you"
        )  # fmt: skip


async def test_concurrent_double_taps_release_each_job_once(
    make_appliance: Callable[..., Any],
) -> None:
    # 12 taps at once from one address are 12 tries counted before any is checked: the
    # lock must allow that many here (a person's double tap is 2)
    sections = {"release": {"max_pin_failures": 20, "pin_lockout_s": 300}}
    async with make_appliance(sections=sections) as app:
        await _put(app, "ann", {"release_code": CODE})
        mine = [await _held(app, "ann", f"tap-key-000{i}") for i in range(4)]
        taps = await asyncio.gather(
            *(_at(app, "printer-03", "print", {"code": CODE, "all": True}) for _ in range(6)),
            *(_at(app, "printer-03", "print", {"code": CODE, "jobs": mine}) for _ in range(6)),
        )
        released = collections.Counter(
            o["job"] for status, out in taps for o in out["outcomes"] if o["outcome"] == "released"
        )
        assert all(status == 200 for status, _ in taps)
        assert released == dict.fromkeys(mine, 1)
        for job_id in mine:
            history = [e.to_state for e in await app.running.service.jobs.events(job_id)]
            assert history == ["HELD", "RELEASED"]


async def test_a_job_pin_opens_that_job_only(make_appliance: Callable[..., Any]) -> None:
    sections = {"release": {"max_pin_failures": 3, "pin_lockout_s": 300}}
    async with make_appliance(sections=sections) as app:
        job = await _held(app, "ann", "pin-key-0001", release_pin=PIN)
        await _held(app, "ann", "pin-key-0002")  # her other job: a PIN does not show it
        for _ in range(5):  # looking again and again does not wear the job's lock down
            status, found = await _at(app, "printer-03", "lookup", {"pin": PIN, "job": job})
            assert status == 200, found
            assert [j["id"] for j in found["jobs"]] == [job]
            assert found["jobs"][0]["pin_required"] is True
        # a code alone does not open a job that has its own PIN
        await _put(app, "ann", {"release_code": CODE})
        status, out = await _at(app, "printer-03", "print", {"code": CODE, "jobs": [job]})
        assert out["outcomes"][0]["outcome"] == "pin-required"
        status, out = await _at(app, "printer-03", "print", {"pin": PIN, "job": job, "all": True})
        assert [(o["job"], o["outcome"]) for o in out["outcomes"]] == [(job, "released")]
        # afterwards the PIN still opens it: nothing is waiting
        status, found = await _at(app, "printer-03", "lookup", {"pin": PIN, "job": job})
        assert (status, found["jobs"]) == (200, [])


async def test_wrong_pins_at_the_page_lock_the_job(make_appliance: Callable[..., Any]) -> None:
    sections = {"release": {"max_pin_failures": 2, "pin_lockout_s": 300}}
    async with make_appliance(sections=sections) as app:
        job = await _held(app, "ann", "pin-key-0001", release_pin=PIN)
        for guess in ("000001", "000002"):
            status, problem = await _at(app, "printer-03", "lookup", {"pin": guess, "job": job})
            assert (status, problem["type"]) == (403, PROBLEM + "credential-invalid")
        # the job's own lock (the address is locked too: whichever answers first)
        status, problem = await _at(app, "printer-03", "lookup", {"pin": PIN, "job": job})
        assert status in (423, 429)
        assert problem["type"] == PROBLEM + "release-locked"
        resp = await app.post(f"/v1/jobs/{job}/release", {"pin": PIN})
        assert resp.status == 423


async def test_station_token_only_at_its_printers(make_appliance: Callable[..., Any]) -> None:
    async with make_appliance(sections=_station_sections()) as app:
        await _put(app, "ann", {"release_code": CODE})
        status, _ = await _at(app, "printer-03", "lookup", {"code": CODE}, token=STATION_TOKEN)
        assert status == 200
        assert (await _at(app, "lobby", "lookup", {"code": CODE}, token=STATION_TOKEN))[0] == 200
        job = await _held(app, "ann", "st-key-00001")
        before = app.snapshot()
        for verb, body in (("lookup", {"code": CODE}), ("print", {"code": CODE, "all": True})):
            status, data, _ = await _at(app, "printer-01", verb, body, STATION_TOKEN, raw=True)
            assert status == 403
            assert data == (
                b'{"type":"urn:edgeprint:problem:forbidden","title":"Forbidden","status":403,'
                b"\"detail\":\"station 'station-3' may not release at 'printer-01'\"}"
            )
        assert app.snapshot() == before
        # and nothing else of the API
        for path in ("/v1/jobs", "/v1/printers", f"/v1/jobs/{job}"):
            resp = await app.get(path, token=STATION_TOKEN)
            problem = await resp.json(content_type=None)
            assert (resp.status, problem["type"]) == (403, PROBLEM + "forbidden"), path
        resp = await app.post(f"/v1/jobs/{job}/release", token=STATION_TOKEN)
        assert resp.status == 403
        # an unknown token is refused even where none is needed
        status, problem = await _at(app, "printer-03", "lookup", {"code": CODE}, token="nope")
        assert (status, problem["type"]) == (401, PROBLEM + "unauthorized")
        # a kiosk's or a technician's token works at any page
        for token in (KIOSK_TOKEN, TECH_TOKEN):
            assert (await _at(app, "printer-01", "lookup", {"code": CODE}, token=token))[0] == 200
        assert app.snapshot() == before


async def test_unknown_place_and_malformed_bodies(make_appliance: Callable[..., Any]) -> None:
    async with make_appliance() as app:
        await _put(app, "ann", {"release_code": CODE})
        job = await _held(app, "ann", "bad-key-0001")
        before = app.snapshot()
        for verb in ("lookup", "print"):
            status, problem = await _at(app, "nowhere", verb, {"code": CODE, "all": True})
            assert (status, problem["type"]) == (404, PROBLEM + "printer-not-found")
        resp = await app.http.get(f"{app.url}/release/nowhere")
        text = await resp.text()
        assert (resp.status, resp.content_type) == (404, "text/html")
        assert "There is no printer or pool of that name here" in text
        cases: list[tuple[str, Any, int, str]] = [
            ("lookup", {}, 422, "invalid-request"),
            ("lookup", {"code": CODE, "card": CODE}, 422, "invalid-request"),
            ("lookup", {"pin": PIN}, 422, "invalid-request"),
            ("lookup", {"code": 48213907}, 422, "invalid-request"),
            ("lookup", [CODE], 422, "invalid-request"),
            ("lookup", {"code": "x" * 65}, 422, "invalid-request"),
            ("print", {"code": CODE}, 422, "invalid-request"),
            ("print", {"code": CODE, "jobs": [job], "all": True}, 422, "invalid-request"),
            ("print", {"code": CODE, "jobs": []}, 422, "invalid-request"),
            ("print", {"code": CODE, "all": True, "printer": "printer-03"}, 422,
             "invalid-request"),  # printer-03 is not of the pool
        ]  # fmt: skip
        for verb, body, status, slug in cases:
            name = "lobby" if "printer" in body else "printer-03"
            got, problem = await _at(app, name, verb, body)
            assert (got, problem["type"]) == (status, PROBLEM + slug), (verb, body)
        resp = await app.http.post(
            f"{app.url}/release/printer-03/lookup", data=b'{"code": ',
            headers={"Content-Type": "application/json"},
        )  # fmt: skip
        problem = await resp.json(content_type=None)
        assert (resp.status, problem["type"]) == (400, PROBLEM + "malformed-json")
        resp = await app.http.post(f"{app.url}/release/printer-03/lookup")
        assert resp.status == 422
        assert app.snapshot() == before


async def test_release_calls_are_rate_limited_per_address(
    make_appliance: Callable[..., Any],
) -> None:
    async with make_appliance(rate_limit="3/minute") as app:
        await app.http.put(
            f"{app.url}/v1/owners/ann", json={"release_code": CODE}, headers=app.headers()
        )
        for _ in range(3):
            assert (await _at(app, "printer-03", "lookup", {"code": CODE}))[0] == 200
        status, data, headers = await _at(app, "printer-03", "lookup", {"code": CODE}, raw=True)
        assert status == 429
        assert b"rate-limited" in data
        assert 1 <= int(headers["Retry-After"]) <= 60


async def test_the_page_is_served_with_a_strict_policy(app: Appliance) -> None:
    for name in ("printer-03", "lobby"):
        async with aiohttp.ClientSession() as http, http.get(f"{app.url}/release/{name}") as resp:
            text = await resp.text()
            assert resp.status == 200
            csp = resp.headers["Content-Security-Policy"]
        assert csp.startswith("default-src 'none'; script-src 'sha256-")
        assert "img-src blob:" in csp
        assert "connect-src 'self'" in csp
        assert "Release code or card" in text
        assert "<script>\n" in text
        assert "innerHTML" not in text


async def test_double_taps_on_real_printers_print_each_job_once(
    tmp_path: Path, printers: Rig
) -> None:
    """Ten concurrent /print taps with the same jobs (a person tapping twice, two phones):
    each job is printed exactly once, on this printer, by the printers' own logs."""
    cfg = rig_config(tmp_path / "data", printers)
    cfg["release"] = {"max_pin_failures": 20, "pin_lockout_s": 300}
    async with appliance(cfg) as (_, kiosk):
        headers = {"Authorization": f"Bearer {KIOSK_TOKEN}"}
        url = f"{kiosk.url}/v1/owners/ann"
        async with kiosk.http.put(url, json={"release_code": CODE}, headers=headers) as r:
            assert r.status == 200
        mine = [(await kiosk.submit(f"rig-tap-{i:04d}", pool="lobby"))["id"] for i in range(4)]

        async def tap(body: dict[str, Any]) -> dict[str, Any]:
            async with kiosk.http.post(
                f"{kiosk.url}/release/printer-02/print", json={"code": CODE, **body}
            ) as resp:
                assert resp.status == 200
                out: dict[str, Any] = await resp.json()
                return out

        taps = await asyncio.gather(
            *(tap({"all": True}) for _ in range(5)), *(tap({"jobs": mine}) for _ in range(5))
        )
        released = collections.Counter(
            o["job"] for out in taps for o in out["outcomes"] if o["outcome"] == "released"
        )
        assert released == dict.fromkeys(mine, 1)
        await kiosk.wait_states(mine, {"DONE"})
        assert_each_printed_once(printers, mine)
        names = printed_names(printers)
        assert {names[f"edgeprint-{i}"][0] for i in mine} == {"printer-02"}


def test_station_tokens_name_configured_printers(tmp_path: Path) -> None:
    def tokens(*extra: dict[str, Any]) -> dict[str, Any]:
        cfg = config_dict(tmp_path / "data")
        cfg["tokens"] = [*cfg["tokens"], *extra]
        return cfg

    station = {"name": "st", "role": "station", "sha256": "a" * 64}
    parse_config(tokens({**station, "printers": ["printer-03", "lobby"]}))
    bad = [
        ({**station, "printers": ["printer-09"]}, "tokens[2].printers[0]", "no configured"),
        (station, "tokens[2]", "names the printers"),
        ({**station, "role": "kiosk", "printers": ["lobby"]}, "tokens[2]", "only a station"),
    ]
    for token, key, words in bad:
        with pytest.raises(errors.ConfigError) as caught:
            parse_config(tokens(token))
        assert any(k.startswith(key) and words in m for k, m in caught.value.problems), (
            caught.value.problems
        )


async def test_a_preview_of_the_persons_held_job(make_appliance: Callable[..., Any]) -> None:
    async with make_appliance() as app:
        await _put(app, "ann", {"release_code": CODE})
        mine = await _held(app, "ann", "prev-key-001")
        other = await _held(app, "carl", "prev-key-002")
        resp = await app.http.post(
            f"{app.url}/release/printer-03/preview", json={"code": CODE, "job_id": mine}
        )
        png = await resp.read()
        assert (resp.status, resp.content_type) == (200, "image/png")
        assert png.startswith(b"\x89PNG\r\n\x1a\n")
        assert int.from_bytes(png[16:20], "big") == 300  # IHDR width
        for body, status, slug in (
            ({"code": CODE, "job_id": other}, 404, "job-not-found"),  # not hers
            ({"code": CODE, "job_id": "0" * 32}, 404, "job-not-found"),
            ({"code": "31415926", "job_id": mine}, 403, "credential-invalid"),
            ({"code": CODE}, 422, "invalid-request"),
            ({"code": CODE, "job_id": "nope"}, 422, "invalid-request"),
        ):
            got, problem = await _at(app, "printer-03", "preview", body)
            assert (got, problem["type"]) == (status, PROBLEM + slug), body


async def test_a_job_number_prefix_opens_one_held_job(make_appliance: Callable[..., Any]) -> None:
    """The page shows "Job 02c7de": its first 6+ hex characters (any case) name the job when
    exactly one HELD job starts so; none or several are the one credential-invalid answer,
    counted like any wrong try."""
    sections = {"release": {"max_pin_failures": 20, "pin_lockout_s": 300}}
    async with make_appliance(sections=sections) as app:
        job = await _held(app, "ann", "prefix-key-01", release_pin=PIN)
        for typed in (job[:6], job[:6].upper(), f" {job[:10].upper()} ", job):
            status, found = await _at(app, "printer-03", "lookup", {"pin": PIN, "job": typed})
            assert status == 200, (typed, found)
            assert [j["id"] for j in found["jobs"]] == [job]
        before = app.snapshot()
        status, out = await _at(app, "printer-03", "print",
                                {"pin": PIN, "job": job[:6], "all": True})  # fmt: skip
        assert [(o["job"], o["outcome"]) for o in out["outcomes"]] == [(job, "released")]
        assert app.snapshot()["spool"] == before["spool"]
        # no longer HELD: a prefix names nothing now (the full id still says "nothing waits")
        status, problem = await _at(app, "printer-03", "lookup", {"pin": PIN, "job": job[:6]})
        assert (status, problem["type"]) == (403, PROBLEM + "credential-invalid")
        for typed in ("abcde", "zzzzzz", "f" * 33):  # too short, not hex, too long
            status, problem = await _at(app, "printer-03", "lookup", {"pin": PIN, "job": typed})
            assert (status, problem["type"]) == (403, PROBLEM + "credential-invalid"), typed


async def test_a_job_number_shared_by_two_held_jobs_opens_neither(
    make_appliance: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    made = itertools.count()
    monkeypatch.setattr(  # job ids that share their first 8 characters
        "edgeprint.service.front.uuid.uuid4", lambda: uuid.UUID(f"abcdef12{next(made):04x}{0:020x}")
    )
    sections = {"release": {"max_pin_failures": 3, "pin_lockout_s": 300}}
    async with make_appliance(sections=sections) as app:
        first = await _held(app, "ann", "clash-key-001", release_pin=PIN)
        second = await _held(app, "bob", "clash-key-002", release_pin=PIN)
        assert first[:8] == second[:8] == "abcdef12"
        for typed in ("abcdef", "ABCDEF12"):
            status, problem = await _at(app, "printer-03", "lookup", {"pin": PIN, "job": typed})
            assert (status, problem["type"]) == (403, PROBLEM + "credential-invalid")
        # a longer number tells them apart
        status, found = await _at(app, "printer-03", "lookup", {"pin": PIN, "job": first[:12]})
        assert (status, [j["id"] for j in found["jobs"]]) == (200, [first])
        # the shared ones were counted as wrong tries: the third wrong one locks
        assert (await _at(app, "printer-03", "lookup", {"pin": PIN, "job": "abcdef"}))[0] == 403
        assert (await _at(app, "printer-03", "lookup", {"pin": PIN, "job": first}))[0] == 429


async def test_print_all_says_a_job_has_its_own_pin(make_appliance: Callable[..., Any]) -> None:
    async with make_appliance() as app:
        await _put(app, "ann", {"release_code": CODE})
        pinned = await _held(app, "ann", "own-pin-key-1", release_pin=PIN)
        plain = await _held(app, "ann", "own-pin-key-2")
        status, out = await _at(app, "printer-03", "print", {"code": CODE, "all": True})
        assert status == 200
        assert {o["job"]: o["outcome"] for o in out["outcomes"]} == {
            pinned: "pin-required",
            plain: "released",
        }
        assert out["message"] == (
            "1 job sent to printer-03; 1 job has its own PIN: choose \u201cI have a job PIN\u201d"
        )
        assert (await (await app.get(f"/v1/jobs/{pinned}")).json())["state"] == "HELD"


async def test_a_pool_release_names_the_pool(make_appliance: Callable[..., Any]) -> None:
    async with make_appliance() as app:
        await _put(app, "ann", {"release_code": CODE})
        job = await _held(app, "ann", "pool-rel-key1")
        status, out = await _at(app, "lobby", "print", {"code": CODE, "jobs": [job]})
        assert status == 200
        (outcome,) = out["outcomes"]
        assert (outcome["outcome"], outcome["pool"]) == ("released", "lobby")
        stored = await (await app.get(f"/v1/jobs/{job}")).json()
        assert outcome["printer"] == stored["printer"]  # None until the pool chose one
        assert out["message"] == f"1 job sent to {outcome['printer'] or 'lobby'}"


async def test_release_addresses_with_a_slash(app: Appliance) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{app.url}/release/printer-03/", allow_redirects=False) as resp:
            assert (resp.status, resp.headers["Location"]) == (308, "/release/printer-03")
        async with http.get(f"{app.url}/release/lobby/") as resp:  # followed: the page
            assert (resp.status, str(resp.url)) == (200, f"{app.url}/release/lobby")
            assert "Release code or card" in await resp.text()
        async with http.get(f"{app.url}/release/") as resp:
            assert (resp.status, resp.content_type) == (404, "text/html")
            assert "No such printer" in await resp.text()
