"""Release PINs and per-token rate limits against a real appliance (SQLite file, HTTP).

The PIN is stored only as a salted scrypt hash, never logged; wrong PINs are
counted before they are checked, so a burst of parallel guesses gets exactly
``max_pin_failures`` tries before the job's release locks.
"""

from __future__ import annotations

import asyncio
import logging
import re
import sqlite3
import time
from collections.abc import Callable
from typing import Any

import pytest

from edgeprint.server import DB_FILE
from testbed.pdfs import make_pdf
from tests.conftest import KIOSK_TOKEN, TECH_TOKEN, Appliance
from tests.polling import eventually

PROBLEM = "urn:edgeprint:problem:"
#: Twelve digits: a string this long does not turn up in a database file by chance.
PIN = "739164028351"
WRONG_PIN = "582046193"
PIN_JOB = {"owner": "student-1", "printer": "printer-03", "release_pin": PIN}


async def _submit_pin_job(app: Appliance, key: str = "pin-key-0001") -> str:
    resp = await app.submit(PIN_JOB, make_pdf("pin job"), key=key)
    assert resp.status == 201, await resp.text()
    body = await resp.json()
    assert body["pin_required"] is True
    return str(body["id"])


async def _release(app: Appliance, job_id: str, pin: str | None, token: str = KIOSK_TOKEN) -> Any:
    body = {} if pin is None else {"pin": pin}
    resp = await app.post(f"/v1/jobs/{job_id}/release", body, token=token)
    return resp.status, await resp.json(content_type=None), resp.headers


def _metric(text: str, name: str) -> float:
    m = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
    return float(m.group(1)) if m else 0.0


async def test_pin_is_stored_hashed_and_never_logged(
    make_appliance: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with make_appliance() as app:
        job_id = await _submit_pin_job(app)
        status, problem, _ = await _release(app, job_id, WRONG_PIN)
        assert (status, problem["type"]) == (403, PROBLEM + "pin-mismatch")
        status, job, _ = await _release(app, job_id, PIN)
        assert (status, job["state"]) == (200, "RELEASED")
        with sqlite3.connect(app.data_dir / DB_FILE) as db:
            (stored,) = db.execute(
                "SELECT release_pin_hash FROM jobs WHERE id = ?", (job_id,)
            ).fetchone()
        assert stored.startswith("scrypt$16384$8$1$")
        for path in app.data_dir.rglob("*"):
            if path.is_file():
                assert PIN.encode() not in path.read_bytes(), path
    messages = [r.getMessage() + str(r.__dict__) for r in caplog.records]
    assert any("release_pin_mismatch" in m for m in messages)
    assert not any(PIN in m or WRONG_PIN in m for m in messages)


async def test_release_needs_the_right_pin(make_appliance: Callable[..., Any]) -> None:
    async with make_appliance() as app:
        job_id = await _submit_pin_job(app)
        status, problem, _ = await _release(app, job_id, None)
        assert (status, problem["type"]) == (403, PROBLEM + "pin-required")
        # a technician's token does not open someone's PIN job either
        status, problem, _ = await _release(app, job_id, "12345", token=TECH_TOKEN)
        assert (status, problem["type"]) == (403, PROBLEM + "pin-mismatch")
        assert (await (await app.get(f"/v1/jobs/{job_id}")).json())["state"] == "HELD"
        status, job, _ = await _release(app, job_id, PIN)
        assert (status, job["state"], job["printer"]) == (200, "RELEASED", "printer-03")
        # a PIN sent for a job that has none is ignored
        plain = await app.submit({"owner": "ann", "pool": "lobby"}, key="plain-key-01")
        plain_id = (await plain.json())["id"]
        status, job, _ = await _release(app, plain_id, "1234")
        assert (status, job["state"], job["pin_required"]) == (200, "RELEASED", False)


async def test_wrong_pins_lock_the_release_for_a_while(
    make_appliance: Callable[..., Any],
) -> None:
    lockout_s = 1.0
    sections = {"release": {"max_pin_failures": 3, "pin_lockout_s": lockout_s}}
    async with make_appliance(sections=sections) as app:
        job_id = await _submit_pin_job(app)
        details = []
        for guess in ("1111", "2222", "3333"):
            status, problem, _ = await _release(app, job_id, guess)
            assert (status, problem["type"]) == (403, PROBLEM + "pin-mismatch")
            details.append(problem["detail"])
        locked_at = time.monotonic()
        assert details[0].endswith("2 more wrong PIN(s) lock its release")
        assert details[1].endswith("1 more wrong PIN(s) lock its release")
        assert details[2].endswith("its release is now locked for 1 s")
        # locked: even the right PIN waits, and says how long
        status, problem, headers = await _release(app, job_id, PIN)
        assert (status, problem["type"], headers["Retry-After"]) == (
            423,
            PROBLEM + "release-locked",
            "1",
        )

        # the lock ends by itself: poll with the right PIN until it opens
        async def opened() -> tuple[int, dict[str, Any]] | None:
            status, job, _ = await _release(app, job_id, PIN)
            return None if status == 423 else (status, job)

        left_s = locked_at + lockout_s + 5 - time.monotonic()
        status, job = await eventually(opened, "the lock to end", timeout_s=left_s, every_s=0.05)
        assert time.monotonic() - locked_at >= lockout_s * 0.9
        assert (status, job["state"]) == (200, "RELEASED")
        with sqlite3.connect(app.data_dir / DB_FILE) as db:
            row = db.execute(
                "SELECT pin_failures, pin_locked_until FROM jobs WHERE id = ?", (job_id,)
            ).fetchone()
        assert row == (0, None)


async def test_parallel_guesses_cannot_outrun_the_lock(
    make_appliance: Callable[..., Any],
) -> None:
    """60 concurrent wrong guesses: exactly max_pin_failures are checked, the rest get 423."""
    sections = {"release": {"max_pin_failures": 5, "pin_lockout_s": 300}}
    async with make_appliance(sections=sections) as app:
        job_id = await _submit_pin_job(app)
        guesses = [f"{i:06d}" for i in range(60)]
        results = await asyncio.gather(*(_release(app, job_id, g) for g in guesses))
        kinds = sorted((status, problem["type"]) for status, problem, _ in results)
        assert kinds.count((403, PROBLEM + "pin-mismatch")) == 5
        assert kinds.count((423, PROBLEM + "release-locked")) == 55
        status, _, headers = await _release(app, job_id, PIN)
        assert status == 423
        assert 290 <= int(headers["Retry-After"]) <= 300
        text = await (await app.get("/metrics", token=TECH_TOKEN)).text()
        assert _metric(text, 'edgeprint_release_pin_attempts_total{outcome="mismatch"}') == 5
        assert _metric(text, 'edgeprint_release_pin_attempts_total{outcome="locked"}') == 56
        assert _metric(text, "edgeprint_release_locks_total") == 1
        job = await (await app.get(f"/v1/jobs/{job_id}")).json()
        assert job["state"] == "HELD"


async def test_same_key_same_pin_is_a_replay(make_appliance: Callable[..., Any]) -> None:
    async with make_appliance() as app:
        job_id = await _submit_pin_job(app)
        again = await app.submit(PIN_JOB, make_pdf("pin job"), key="pin-key-0001")
        assert again.status == 200
        assert again.headers["Idempotent-Replayed"] == "true"
        assert (await again.json())["id"] == job_id


async def test_rate_limit_per_token(make_appliance: Callable[..., Any]) -> None:
    async with make_appliance(rate_limit="3/minute") as app:
        for _ in range(3):
            assert (await app.get("/v1/jobs")).status == 200
        before = app.snapshot()
        resp = await app.submit(key="rate-key-0001")
        problem = await resp.json(content_type=None)
        assert (resp.status, problem["type"]) == (429, PROBLEM + "rate-limited")
        assert resp.content_type == "application/problem+json"
        assert "limit 3 per 1 minute" in problem["detail"]
        assert 1 <= int(resp.headers["Retry-After"]) <= 60
        assert app.snapshot() == before
        # another token has its own budget; an unknown token is still 401, not 429
        assert (await app.get("/v1/printers", token=TECH_TOKEN)).status == 200
        assert (await app.get("/v1/jobs", token="not-a-token")).status == 401
        text = await (await app.get("/metrics", token=TECH_TOKEN)).text()
        assert _metric(text, "edgeprint_rate_limited_total") == 1


async def test_cancel_of_a_held_pin_job_needs_the_pin_from_a_kiosk(
    make_appliance: Callable[..., Any],
) -> None:
    sections = {"release": {"max_pin_failures": 2, "pin_lockout_s": 300}}
    async with make_appliance(sections=sections) as app:
        job_id = await _submit_pin_job(app)
        before = app.snapshot()
        resp = await app.post(f"/v1/jobs/{job_id}/cancel")
        problem = await resp.json(content_type=None)
        assert (resp.status, problem["type"]) == (403, PROBLEM + "pin-required")
        assert app.snapshot() == before
        resp = await app.post(f"/v1/jobs/{job_id}/cancel", {"pin": WRONG_PIN})
        problem = await resp.json(content_type=None)
        assert (resp.status, problem["type"]) == (403, PROBLEM + "pin-mismatch")
        resp = await app.post(f"/v1/jobs/{job_id}/cancel", {"pin": PIN})
        assert (resp.status, (await resp.json())["state"]) == (200, "CANCELLED")
        # a technician cancels without the PIN; a kiosk may cancel once it is released
        other = await _submit_pin_job(app, key="pin-key-0002")
        resp = await app.post(f"/v1/jobs/{other}/cancel", token=TECH_TOKEN)
        assert (resp.status, (await resp.json())["state"]) == (200, "CANCELLED")
        third = await _submit_pin_job(app, key="pin-key-0003")
        assert (await _release(app, third, PIN))[0] == 200
        resp = await app.post(f"/v1/jobs/{third}/cancel")
        assert resp.status in (200, 202), await resp.text()


async def test_wrong_cancel_pins_count_towards_the_release_lock(
    make_appliance: Callable[..., Any],
) -> None:
    sections = {"release": {"max_pin_failures": 2, "pin_lockout_s": 300}}
    async with make_appliance(sections=sections) as app:
        job_id = await _submit_pin_job(app)
        resp = await app.post(f"/v1/jobs/{job_id}/cancel", {"pin": "1111"})
        assert resp.status == 403
        status, problem, _ = await _release(app, job_id, "2222")
        assert (status, problem["type"]) == (403, PROBLEM + "pin-mismatch")
        assert problem["detail"].endswith("its release is now locked for 300 s")
        resp = await app.post(f"/v1/jobs/{job_id}/cancel", {"pin": PIN})
        problem = await resp.json(content_type=None)
        assert (resp.status, problem["type"]) == (423, PROBLEM + "release-locked")
        assert (await (await app.get(f"/v1/jobs/{job_id}")).json())["state"] == "HELD"


async def test_rate_limit_is_a_moving_window_per_token_and_limit() -> None:
    """Each limit counts the hits of its last window exactly: the (n+1)-th inside it is
    refused with the seconds until the oldest leaves, and a hit is free again then."""
    from edgeprint import errors
    from edgeprint.api.ratelimit import TokenRateLimiter

    now = [1000.0]
    limiter = TokenRateLimiter("2/second;3/minute", clock=lambda: now[0])
    await limiter.hit("kiosk-1")
    now[0] += 0.5
    await limiter.hit("kiosk-1")
    with pytest.raises(errors.RateLimited) as second:
        await limiter.hit("kiosk-1")  # a third inside one second
    assert (second.value.limit, second.value.retry_after_s) == ("2 per 1 second", 1)
    await limiter.hit("kiosk-2")  # another token has its own budget
    now[0] += 0.6  # the first hit left the one-second window
    await limiter.hit("kiosk-1")
    now[0] += 1.0
    with pytest.raises(errors.RateLimited) as minute:
        await limiter.hit("kiosk-1")  # the fourth inside one minute
    assert minute.value.limit == "3 per 1 minute"
    assert minute.value.retry_after_s == 58  # the first hit leaves the minute at 1060.0
    limiter.reconfigure("2/second;10/minute")  # a new limit starts empty
    now[0] += 1.0
    await limiter.hit("kiosk-1")
