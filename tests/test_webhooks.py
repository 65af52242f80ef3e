"""Webhooks: outbox rows in the state change's transaction, signed at-least-once delivery.

Every receiver is a real aiohttp server on loopback; signatures are checked with
the ``standardwebhooks`` library (an independent implementation of the convention).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from edgeprint import errors
from edgeprint.config import parse_config
from edgeprint.server import DB_FILE
from edgeprint.store.interface import Store as StoreInterface
from edgeprint.store.outbox import Outbox
from testbed.proc import ServeProcess
from testbed.rig import Rig
from tests.conftest import TECH_TOKEN, Appliance, config_dict, to_toml
from tests.polling import eventually
from tests.printing import Client, appliance, assert_each_printed_once, rig_config
from tests.test_reprint import done_job, reprint
from tests.test_resolve import dead_job
from tests.webhook_receiver import Receiver, webhook

JOB_EVENTS = ["job.done", "job.dead", "job.cancelled", "job.expired"]
PROBLEM = "urn:edgeprint:problem:"


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    r = await Receiver().start()
    try:
        yield r
    finally:
        await r.stop()


def outbox_rows(app: Appliance) -> list[tuple[Any, ...]]:
    with sqlite3.connect(app.data_dir / DB_FILE) as db:
        return db.execute("SELECT type, job_id FROM webhook_outbox ORDER BY seq").fetchall()


def job_rows(app: Appliance) -> dict[str, Any]:
    """The job store alone (jobs and their events): what a webhook must never change."""
    snap = app.snapshot()
    return {"jobs": snap["jobs"], "events": snap["events"]}


async def metric(app: Appliance, outcome: str) -> float:
    text = (await (await app.get("/metrics")).read()).decode()
    line = f'edgeprint_webhook_deliveries_total{{outcome="{outcome}"}} '
    values = [float(x.split(" ")[-1]) for x in text.splitlines() if x.startswith(line)]
    assert len(values) == 1, text
    return values[0]


async def failed(app: Appliance, count: int, timeout_s: float = 20.0) -> list[dict[str, Any]]:
    """Poll GET /v1/webhooks/deliveries?state=failed until ``count`` are listed."""

    async def parked() -> list[dict[str, Any]] | None:
        resp = await app.get("/v1/webhooks/deliveries?state=failed", token=TECH_TOKEN)
        assert resp.status == 200
        found: list[dict[str, Any]] = (await resp.json())["deliveries"]
        return found if len(found) >= count else None

    return await eventually(parked, f"{count} deliveries parked", timeout_s=timeout_s)


# --- config -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "key", "words"),
    [
        pytest.param({"url": "ftp://h/x"}, "webhooks[0].url", "http:// or https://", id="ftp"),
        pytest.param({"url": "file:///etc/passwd"}, "webhooks[0].url", "http://", id="file"),
        pytest.param({"url": "https:///nohost"}, "webhooks[0].url", "with a host", id="no-host"),
        pytest.param({"url": "hook.example"}, "webhooks[0].url", "http://", id="no-scheme"),
        pytest.param({"events": ["job.printed"]}, "webhooks[0].events[0]", "job.done", id="event"),
        pytest.param({"events": []}, "webhooks[0].events", "at least 1", id="no-events"),
        pytest.param({"events": ["job.done", "job.done"]}, "webhooks[0].events", "twice", id="dup"),
        pytest.param({"secret": "hunter2"}, "webhooks[0].secret", "whsec_", id="secret-form"),
        pytest.param({"secret": "whsec_c2hvcnQ="}, "webhooks[0].secret", "5 bytes", id="short"),
        pytest.param({"secret": "whsec_!!!!"}, "webhooks[0].secret", "base64", id="not-b64"),
        pytest.param({"max_delivery_s": 0}, "webhooks[0].max_delivery_s", "greater", id="time"),
        pytest.param({"retry_max_s": 0.01}, "webhooks[0].retry_max_s", "retry_base_s", id="cap"),
        pytest.param({"colour": "red"}, "webhooks[0].colour", "unknown key", id="unknown"),
    ],
)  # fmt: skip
def test_bad_webhook_config_names_the_key(entry: dict[str, Any], key: str, words: str) -> None:
    """A webhook URL that is not http(s), a bad event or secret: a config error naming the key."""
    cfg = {"webhooks": [webhook("https://hooks.example/edgeprint", ["job.done"]) | entry]}
    with pytest.raises(errors.ConfigError) as caught:
        parse_config(cfg)
    problems = dict(caught.value.problems)
    assert key in problems, caught.value.problems
    assert words in problems[key]


def test_two_webhooks_with_one_url_are_refused() -> None:
    """The URL identifies a receiver (its cursor): listing it twice is a config error."""
    entry = webhook("https://hooks.example/edgeprint", ["job.done"])
    with pytest.raises(errors.ConfigError) as caught:
        parse_config({"webhooks": [entry, entry]})
    assert "webhooks[1].url" in dict(caught.value.problems)


# --- the outbox ---------------------------------------------------------------------------------


async def test_outbox_row_only_with_its_state_change(
    make_appliance: Callable[..., Any], receiver: Receiver
) -> None:
    """A state change writes its outbox row; a refused change (409) writes none."""
    await receiver.stop()  # nothing is delivered: the rows stay to be looked at
    hook = webhook(receiver.url, ["job.done", "job.dead"], max_delivery_s=600)
    async with make_appliance(sections={"webhooks": [hook]}) as app:
        job = await dead_job(app, "hook-key-0001")
        assert outbox_rows(app) == [("job.dead", job["id"])]
        resp = await app.post(f"/v1/jobs/{job['id']}/replay", token=TECH_TOKEN)
        assert resp.status == 200  # DEAD → RELEASED: nobody subscribed to it
        resp = await app.post(f"/v1/jobs/{job['id']}/replay", token=TECH_TOKEN)
        assert resp.status == 409  # no change, no notice
        held = await (await app.submit(key="hook-key-0002")).json()
        assert (await app.post(f"/v1/jobs/{held['id']}/cancel")).status == 200
        assert outbox_rows(app) == [("job.dead", job["id"])]  # job.cancelled is not wanted


async def test_no_webhooks_no_outbox_rows(app: Appliance) -> None:
    """Without [[webhooks]] nothing is written to the outbox (state changes cost no more)."""
    job = await dead_job(app, "hook-key-0003")
    await app.post(f"/v1/jobs/{job['id']}/cancel", token=TECH_TOKEN)
    assert outbox_rows(app) == []


# --- delivery -------------------------------------------------------------------------------


async def test_each_job_event_is_delivered_signed(
    make_appliance: Callable[..., Any], receiver: Receiver
) -> None:
    """job.dead, job.done, job.cancelled, job.expired: signed, Standard Webhooks headers, data."""
    sections = {
        "webhooks": [webhook(receiver.url, JOB_EVENTS)],
        "retention": {"hold_ttl_s": 0.05},
    }
    async with make_appliance(sections=sections) as app:
        dead = await dead_job(app, "hook-key-0004")
        resp = await app.post(f"/v1/jobs/{dead['id']}/resolve", {"printed": True}, TECH_TOKEN)
        assert resp.status == 200
        cancelled = await (await app.submit(key="hook-key-0005")).json()
        assert (await app.post(f"/v1/jobs/{cancelled['id']}/cancel")).status == 200
        expiring = await (await app.submit(key="hook-key-0006")).json()

        async def expired() -> bool:
            await app.running.service.upkeep.housekeeping()
            return (await app.running.service.get(expiring["id"])).state == "EXPIRED"

        await eventually(expired, "the held job to expire")
        got = await receiver.wait_for(4)
        assert receiver.delivered_types() == [
            ("job.dead", dead["id"]),
            ("job.done", dead["id"]),
            ("job.cancelled", cancelled["id"]),
            ("job.expired", expiring["id"]),
        ]
        first = got[0]
        assert first.headers["Content-Type"] == "application/json"
        assert first.headers["webhook-id"].startswith("msg_")
        assert first.headers["webhook-signature"].startswith("v1,")
        assert abs(int(first.headers["webhook-timestamp"]) - time.time()) < 60
        payload = first.verified()
        assert payload["type"] == "job.dead"
        assert payload["timestamp"].endswith("Z")
        data = payload["data"]
        assert data["job_id"] == dead["id"]
        assert data["idempotency_key"] == "hook-key-0004"
        assert (data["state"], data["from_state"]) == ("DEAD", "PRINTING")
        assert data["dead_reason"] == "outcome_unknown"
        assert data["owner"] == "ann"
        done = got[1].verified()["data"]
        assert (done["state"], done["actor"]) == ("DONE", "tech-1")
        assert len({r.id for r in got}) == 4
        assert await metric(app, "delivered") == 4


async def test_a_tampered_body_fails_verification(
    make_appliance: Callable[..., Any], receiver: Receiver
) -> None:
    """The signature covers the body: one changed byte and a receiver refuses it."""
    from standardwebhooks.webhooks import WebhookVerificationError

    async with make_appliance(sections={"webhooks": [webhook(receiver.url, JOB_EVENTS)]}) as app:
        await dead_job(app, "hook-key-0007")
        [got] = await receiver.wait_for(1)
    got.verified()
    got.body = got.body.replace(b"DEAD", b"DONE")
    with pytest.raises(WebhookVerificationError):
        got.verified()


async def test_receiver_down_then_back_gets_everything_in_order(
    make_appliance: Callable[..., Any], receiver: Receiver
) -> None:
    """Events made while the receiver is down are delivered, in order, once it returns."""
    hook = webhook(receiver.url, JOB_EVENTS, retry_max_s=0.05)
    await receiver.stop()
    async with make_appliance(sections={"webhooks": [hook]}) as app:
        a = await dead_job(app, "hook-key-0008")
        b = await dead_job(app, "hook-key-0009")
        await app.post(f"/v1/jobs/{a['id']}/resolve", {"printed": True}, TECH_TOKEN)
        await app.post(f"/v1/jobs/{b['id']}/cancel", token=TECH_TOKEN)

        async def retried() -> bool:  # it really tried, and failed, a few times
            return await metric(app, "retried") >= 3

        await eventually(retried, "three failed tries")
        await receiver.start()  # the same port
        await receiver.wait_for(4)
        assert receiver.delivered_types() == [
            ("job.dead", a["id"]),
            ("job.dead", b["id"]),
            ("job.done", a["id"]),
            ("job.cancelled", b["id"]),
        ]
        assert await metric(app, "failed") == 0


async def test_order_per_job_is_kept_through_retries(
    make_appliance: Callable[..., Any], receiver: Receiver
) -> None:
    """A receiver failing the first attempts still gets one job's events in their order."""
    receiver.fail_first = 5
    async with make_appliance(sections={"webhooks": [webhook(receiver.url, JOB_EVENTS)]}) as app:
        jobs = [await dead_job(app, f"hook-key-ord-{i}") for i in range(3)]
        for j in jobs:
            await app.post(f"/v1/jobs/{j['id']}/resolve", {"printed": False}, TECH_TOKEN)
        # RELEASED again on unreachable printer-03: park them DEAD once more, then cancel
        for _ in jobs:
            claimed = await app.running.service.worker.claim_next("printer-03")
            assert claimed is not None
            await app.running.service.outcomes.fail(claimed, "printer-03", "poison", "bad")
        for j in jobs:
            await app.post(f"/v1/jobs/{j['id']}/cancel", token=TECH_TOKEN)
        await receiver.wait_for(5 + 9)
        delivered = receiver.delivered_types()
        for j in jobs:
            mine = [t for t, job_id in delivered if job_id == j["id"]]
            assert mine == ["job.dead", "job.dead", "job.cancelled"]


async def test_receiver_failing_for_ever_is_parked_and_the_store_untouched(
    make_appliance: Callable[..., Any], receiver: Receiver
) -> None:
    """500 for ever: parked after max_delivery_s, listed as failed, counted; jobs unchanged."""
    receiver.mode = "fail"
    url = receiver.url.replace("127.0.0.1", "hook:s3cret@127.0.0.1") + "?key=s3cret"
    hook = webhook(url, JOB_EVENTS, max_delivery_s=0.3)
    async with make_appliance(sections={"webhooks": [hook]}) as app:
        job = await dead_job(app, "hook-key-0010")
        before = job_rows(app)
        [parked] = await failed(app, 1)
        assert parked["state"] == "failed"
        assert parked["type"] == "job.dead"
        assert parked["job_id"] == job["id"]
        assert parked["url"] == receiver.url  # no user info, no query: they may be credentials
        assert parked["last_error"] == "HTTP 500"
        assert parked["attempts"] >= 2
        assert parked["webhook_id"] == receiver.hooks()[0].id
        assert {r.id for r in receiver.hooks()} == {parked["webhook_id"]}  # the same id each time
        assert await metric(app, "failed") == 1
        assert await metric(app, "retried") == parked["attempts"] - 1
        assert await metric(app, "delivered") == 0
        assert job_rows(app) == before
        # the next event is not held up behind the parked one
        receiver.mode = "ok"
        await app.post(f"/v1/jobs/{job['id']}/cancel", token=TECH_TOKEN)
        await receiver.wait_for(parked["attempts"] + 1)
        assert receiver.hooks()[-1].verified()["type"] == "job.cancelled"


async def test_hanging_receiver_times_out_and_never_holds_the_api(
    make_appliance: Callable[..., Any], receiver: Receiver
) -> None:
    """A receiver that never answers: each attempt times out; the API answers meanwhile."""
    receiver.mode = "hang"
    hook = webhook(receiver.url, JOB_EVENTS, timeout_s=0.2, max_delivery_s=0.5)
    async with make_appliance(sections={"webhooks": [hook]}) as app:
        job = await dead_job(app, "hook-key-0011")
        await receiver.wait_for(1)  # a delivery is hanging right now
        resp = await app.post(f"/v1/jobs/{job['id']}/cancel", token=TECH_TOKEN)
        assert resp.status == 200  # answered while the receiver holds the delivery
        [parked] = await failed(app, 1)
        assert parked["last_error"] == "no answer within 0.2 s"
        assert parked["attempts"] >= 2


async def test_redirect_is_not_followed(
    make_appliance: Callable[..., Any], receiver: Receiver
) -> None:
    """A 307 is a failed attempt: the body never goes to the redirect's target."""
    receiver.mode = "redirect"
    hook = webhook(receiver.url, JOB_EVENTS, max_delivery_s=0.3)
    async with make_appliance(sections={"webhooks": [hook]}) as app:
        await dead_job(app, "hook-key-0012")
        [parked] = await failed(app, 1)
    assert parked["last_error"] == "HTTP 307: redirect to '/elsewhere' not followed"
    assert all(r.path == "/hook" for r in receiver.requests)


async def test_deliveries_query_is_checked(app: Appliance) -> None:
    """state other than failed, bad limits and unknown parameters are 422; kiosks 403."""
    for query in ("state=delivered", "limit=0", "colour=red", "state=failed&state=failed"):
        resp = await app.get(f"/v1/webhooks/deliveries?{query}", token=TECH_TOKEN)
        assert (resp.status, (await resp.json())["type"]) == (422, PROBLEM + "invalid-request")
    resp = await app.get("/v1/webhooks/deliveries")
    assert resp.status == 403
    resp = await app.get("/v1/webhooks/deliveries", token=TECH_TOKEN)
    assert await resp.json() == {"deliveries": [], "next_cursor": None}


async def test_printer_unhealthy_is_delivered(
    make_appliance: Callable[..., Any], receiver: Receiver
) -> None:
    """An unreachable printer turning unhealthy is a printer.unhealthy event with its reason."""
    sections = {
        "webhooks": [webhook(receiver.url, ["printer.unhealthy"])],
        "dispatch": {"failure_threshold": 1, "unreachable_retry_max_s": 0.05},
    }
    async with make_appliance(sections=sections):
        got = await receiver.wait_for(3)
    printers = sorted(r.verified()["data"]["printer"] for r in got[:3])
    assert printers == ["printer-01", "printer-02", "printer-03"]
    data = got[0].verified()["data"]
    assert data["healthy"] is False
    assert data["reason"]


async def test_job_reprinted_is_delivered_signed_once_per_reprint(
    make_appliance: Callable[..., Any], receiver: Receiver
) -> None:
    """job.reprinted reaches a real receiver, signed (Standard Webhooks): one delivery per
    reprint made, none for a replay of its key or a refusal over `max_reprints`; the data
    links the new job to its original, with who asked and why."""
    sections = {
        "webhooks": [webhook(receiver.url, ["job.reprinted"])],
        "release": {"max_reprints": 2},
    }
    async with make_appliance(sections=sections) as app:
        original = await done_job(app, "hook-reprint-0001")
        made = await asyncio.gather(
            *(reprint(app, original["id"], {"reason": "badge lost"}, key="hook-rp-key-1")
              for _ in range(3))
        )  # fmt: skip
        assert sorted(s for s, _, _ in made) == [200, 200, 201]
        [first] = {b["id"] for _, b, _ in made}
        status, second, _ = await reprint(
            app, original["id"], {"reason": "misspelt, fixed"}, key="hook-rp-key-2"
        )
        assert status == 201
        status, problem, _ = await reprint(app, original["id"], {"reason": "x"}, key="hook-rp-3")
        assert (status, problem["type"]) == (409, PROBLEM + "reprint-limit")
        got = await receiver.wait_for(2)
        assert receiver.delivered_types() == [
            ("job.reprinted", first),
            ("job.reprinted", second["id"]),
        ]
        payload = got[0].verified()
        assert payload["timestamp"].endswith("Z")
        data = payload["data"]
        assert (data["reprint_of"], data["asked_for"]) == (original["id"], original["id"])
        assert (data["reason"], data["idempotency_key"]) == ("badge lost", "hook-rp-key-1")
        assert data["actor"] == "kiosk-1"
        assert got[1].verified()["data"]["reason"] == "misspelt, fixed"
        assert await metric(app, "delivered") == 2
        assert [t for t, _ in outbox_rows(app)] == ["job.reprinted"] * 2  # no more made
    assert len(receiver.hooks()) == 2  # each answered 204 at once: no second try


# --- kill -9 -------------------------------------------------------------------------------


def _serve_config(tmp_path: Path, hook: dict[str, Any]) -> Path:
    """A config file for ``edgeprint serve`` with one [[webhooks]] entry."""
    cfg = config_dict(tmp_path / "data")
    lines = [to_toml(cfg), "[[webhooks]]"]
    for key, value in hook.items():
        lines.append(f"{key} = {json.dumps(value)}")
    path = tmp_path / "config.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.slow
@pytest.mark.parametrize("window", ["receiver_down", "delivery_in_flight"])
async def test_kill_9_between_state_change_and_delivery_loses_nothing(
    tmp_path: Path, receiver: Receiver, window: str
) -> None:
    """Killed after the change committed and before its delivery: delivered after the restart."""
    if window == "receiver_down":
        await receiver.stop()
    else:
        receiver.mode = "hang"  # the delivery is under way when the appliance dies
    hook = webhook(receiver.url, JOB_EVENTS, max_delivery_s=600)
    cfg = _serve_config(tmp_path, hook)
    first = ServeProcess(cfg, tmp_path / "first.log")
    async with aiohttp.ClientSession() as http:
        with await asyncio.to_thread(first.start):
            kiosk = Client(http, first.url)
            job = await kiosk.submit("kill-9-0001")
            status, body = await kiosk.post(f"/v1/jobs/{job['id']}/cancel")
            assert (status, body["state"]) == (200, "CANCELLED")
            if window == "receiver_down":
                await _wait_log(first, "webhook_retry")  # an attempt failed: not delivered
            else:
                await receiver.wait_for(1)  # the attempt hangs in the receiver
            first.kill()
        if window == "receiver_down":
            await receiver.start()
        else:
            receiver.mode = "ok"
        second = ServeProcess(cfg, tmp_path / "second.log")
        with await asyncio.to_thread(second.start):
            got = await receiver.wait_for(1 if window == "receiver_down" else 2)
            assert second.terminate() == 0
    ids = {r.id for r in got}
    assert len(ids) == 1, "a redelivery keeps its webhook-id"
    payload = got[-1].verified()
    assert (payload["type"], payload["data"]["job_id"]) == ("job.cancelled", job["id"])


async def _wait_log(proc: ServeProcess, event: str, timeout_s: float = 20.0) -> None:
    await eventually(
        lambda: f'"event": "{event}"' in proc.log_path.read_text(errors="replace"),
        lambda: f"{event} in the log:\n{proc.tail()}",
        timeout_s=timeout_s,
    )


async def test_printer_health_events_from_a_real_printer(
    tmp_path: Path, printers: Rig, receiver: Receiver
) -> None:
    """Paper out → printer.unhealthy (media-empty), paper in → printer.healthy, in order."""
    cfg = rig_config(tmp_path / "data", printers)
    cfg["webhooks"] = [webhook(receiver.url, ["printer.unhealthy", "printer.healthy"])]
    async with appliance(cfg) as (run, _):
        printers.media("printer-02", "empty")
        await receiver.wait_for(1)
        printers.media("printer-02", "loaded")
        got = await receiver.wait_for(2)
        snap = run.dispatcher.snapshot("printer-02")
        assert snap is not None
        assert snap.healthy
    events = [r.verified() for r in got]
    assert [(e["type"], e["data"]["printer"]) for e in events] == [
        ("printer.unhealthy", "printer-02"),
        ("printer.healthy", "printer-02"),
    ]
    assert "media-empty" in events[0]["data"]["reason"]
    assert events[0]["data"]["pool"] == "lobby"
    assert events[1]["data"]["healthy"] is True


async def test_outbox_keeps_what_a_receiver_still_needs(store: StoreInterface) -> None:
    """Pruning deletes old events every receiver is done with, and old failures; nothing else
    (on both store backends)."""
    outbox = Outbox(store)
    await outbox.subscribe({"printer.unhealthy"})
    for i, at in enumerate((100.0, 200.0, 300.0)):
        assert await outbox.add_printer_event(f"msg_{i}", "printer.unhealthy", "p", at, {})
    assert not await outbox.add_printer_event("msg_x", "printer.healthy", "p", 1.0, {})
    fast = await outbox.start_cursor("http://fast/", now=0)
    slow = await outbox.start_cursor("http://slow/", now=0)
    assert (fast, slow) == (3, 3)  # a new receiver starts after what is stored
    await store.write("UPDATE webhook_cursors SET seq = 2 WHERE url = 'http://fast/'")
    await store.write("UPDATE webhook_cursors SET seq = 1 WHERE url = 'http://slow/'")
    assert await outbox.prune(250.0, ["http://fast/", "http://slow/"]) == 1
    assert [e.id for e in await outbox.after(0, ["printer.unhealthy"])] == ["msg_1", "msg_2"]
    assert await outbox.prune(250.0, ["http://fast/"]) == 1  # slow is no longer configured
    assert [e.id for e in await outbox.after(0, ["printer.unhealthy"])] == ["msg_2"]
    [event] = await outbox.after(0, ["printer.unhealthy"])
    for url, at in (("http://fast/", 100.0), ("http://slow/", 400.0)):
        await outbox.park(url, event, attempts=3, first_attempt_at=at, now=at, error="x")
    await outbox.prune(250.0, [])
    assert [f.url for f in await outbox.failures()] == ["http://slow/"]


async def test_a_new_receiver_starts_with_new_events(
    make_appliance: Callable[..., Any], receiver: Receiver
) -> None:
    """A receiver added to the config later gets what happens from then on, not the history."""
    other = await Receiver().start()
    try:
        first = {"webhooks": [webhook(receiver.url, ["job.dead"])]}
        async with make_appliance(sections=first) as app:
            old = await dead_job(app, "hook-key-old1")
            await receiver.wait_for(1)
        both = {"webhooks": [webhook(receiver.url, ["job.dead"]), webhook(other.url, ["job.dead"])]}
        async with make_appliance(sections=both) as app:
            new = await dead_job(app, "hook-key-new1")
            await receiver.wait_for(2)
            await other.wait_for(1)
        assert receiver.delivered_types() == [("job.dead", old["id"]), ("job.dead", new["id"])]
        assert other.delivered_types() == [("job.dead", new["id"])]
    finally:
        await other.stop()


async def test_a_hanging_receiver_never_holds_printing(
    tmp_path: Path, printers: Rig, receiver: Receiver
) -> None:
    """While the receiver holds the first job.done unanswered, later jobs still print."""
    receiver.mode = "hang"
    cfg = rig_config(tmp_path / "data", printers)
    cfg["webhooks"] = [webhook(receiver.url, ["job.done"], timeout_s=60, max_delivery_s=600)]
    async with appliance(cfg) as (_, kiosk):
        first = await kiosk.submit("hang-key-0001", printer="printer-01", hold=False)
        await kiosk.wait_states([first["id"]], {"DONE"})
        await receiver.wait_for(1)  # its notice hangs in the receiver now
        more = [
            await kiosk.submit(f"hang-key-{i:04d}", pool="lobby", hold=False) for i in range(2, 6)
        ]
        await kiosk.wait_states([j["id"] for j in more], {"DONE"})
        assert len(receiver.hooks()) == 1  # still the first, still unanswered
    assert_each_printed_once(printers, [first["id"], *(j["id"] for j in more)])
