"""Rehearsal and go-live (issue 23): the event's mode through the API, in the store, across a
restart, and against a real printer while a job is in flight."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from edgeprint.states import JobState
from edgeprint.store.event import EventModes
from edgeprint.store.interface import Store
from edgeprint.store.job_rows import NewJob
from edgeprint.store.jobs import Jobs
from testbed.rig import Rig
from tests.conftest import TECH_TOKEN, Appliance
from tests.polling import eventually
from tests.printing import appliance, rig_config

PROBLEM = "urn:edgeprint:problem:"


async def _job(app: Appliance, key: str, **meta: Any) -> dict[str, Any]:
    resp = await app.submit({"owner": "ann", **meta}, key=key)
    assert resp.status == 201, await resp.text()
    body: dict[str, Any] = await resp.json()
    return body


async def _dead(app: Appliance, key: str) -> dict[str, Any]:
    """A job parked DEAD as a worker parks a poison job (printer-03 is unreachable here)."""
    job = await _job(app, key, printer="printer-03", hold=False)
    claimed = await app.running.service.worker.claim_next("printer-03")
    assert claimed is not None
    assert claimed.id == job["id"]
    assert (
        await app.running.service.outcomes.fail(claimed, "printer-03", "poison", "bad PDF")
        is not None
    )
    return job


async def _get(app: Appliance, path: str) -> Any:
    resp = await app.get(path, token=TECH_TOKEN)
    assert resp.status == 200, await resp.text()
    return await resp.json()


async def test_rehearsal_marks_jobs_and_go_live_cancels_what_waits(app: Appliance) -> None:
    """Jobs made in rehearsal say so; go-live cancels the HELD, RELEASED and DEAD ones with
    that reason, leaves live jobs alone, and the live figures never count rehearsal jobs."""
    event = await _get(app, "/v1/event")
    assert (event["mode"], event["since"], event["actor"]) == ("live", None, "install")
    live_held = await _job(app, "live-held-0001")
    assert live_held["rehearsal"] is False
    resp = await app.post("/v1/event/rehearsal", token=TECH_TOKEN)
    assert resp.status == 200
    started = await resp.json()
    assert (started["mode"], started["actor"]) == ("rehearsal", "tech-1")
    assert started["since"] is not None
    held = await _job(app, "reh-held-0001")
    dead = await _dead(app, "reh-dead-0001")
    waiting = await _job(app, "reh-wait-0001", printer="printer-03", hold=False)
    assert [j["rehearsal"] for j in (held, waiting, dead)] == [True, True, True]
    assert waiting["state"] == "RELEASED"

    stats = await _get(app, "/v1/stats")
    assert stats["jobs_by_state"]["HELD"] == 1  # the live job only
    assert stats["jobs_by_state"]["DEAD"] == 0
    assert stats["dead_letters"] == 1  # a person acts on a rehearsal's dead job too
    event = await _get(app, "/v1/event")
    assert event["rehearsal_jobs_by_state"]["HELD"] == 1
    assert event["rehearsal_jobs_by_state"]["RELEASED"] == 1
    assert event["rehearsal_jobs_by_state"]["DEAD"] == 1
    metrics = await (await app.http.get(f"{app.url}/metrics")).text()
    assert 'edgeprint_rehearsal_jobs{state="HELD"} 1.0' in metrics
    assert 'edgeprint_jobs{state="HELD"} 1.0' in metrics
    assert "edgeprint_event_rehearsal 1.0" in metrics
    assert 'edgeprint_jobs_accepted_total{state="HELD"} 1.0' in metrics

    resp = await app.post("/v1/event/live", token=TECH_TOKEN)
    assert resp.status == 200
    live = await resp.json()
    assert live["mode"] == "live"
    assert sorted(live["cancelled"]) == sorted(j["id"] for j in (held, waiting, dead))
    for j in (held, waiting, dead):
        after = await _get(app, f"/v1/jobs/{j['id']}")
        assert (after["state"], after["rehearsal"]) == ("CANCELLED", True)
        assert after["last_error"] == "cancelled at go-live: a rehearsal job that had not printed"
        events = await app.running.service.jobs.events(j["id"])
        assert (events[-1].to_state, events[-1].reason, events[-1].actor) == (
            JobState.CANCELLED,
            "rehearsal_ended",
            "tech-1",
        )
    assert (await _get(app, f"/v1/jobs/{live_held['id']}"))["state"] == "HELD"
    first_live = await _job(app, "live-after-0001")
    assert first_live["rehearsal"] is False
    stats = await _get(app, "/v1/stats")
    assert stats["jobs_by_state"]["HELD"] == 2
    assert stats["jobs_by_state"]["CANCELLED"] == 0
    assert (await _get(app, "/v1/event"))["rehearsal_jobs_by_state"]["CANCELLED"] == 3
    metrics = await (await app.http.get(f"{app.url}/metrics")).text()
    assert "edgeprint_event_rehearsal 0.0" in metrics
    # a second rehearsal counts its own test jobs, not the first one's
    assert (await app.post("/v1/event/rehearsal", token=TECH_TOKEN)).status == 200
    again = await _get(app, "/v1/event")
    assert sum(again["rehearsal_jobs_by_state"].values()) == 0
    await _job(app, "reh-two-0001")
    again = await _get(app, "/v1/event")
    assert again["rehearsal_jobs_by_state"]["HELD"] == 1
    assert sum(again["rehearsal_jobs_by_state"].values()) == 1


async def test_go_live_when_live_is_409_and_changes_nothing(app: Appliance) -> None:
    """Go-live outside a rehearsal: 409 not-in-rehearsal, mode live, nothing stored changes."""
    await _job(app, "held-key-0001")
    before = app.snapshot()
    resp = await app.post("/v1/event/live", token=TECH_TOKEN)
    assert resp.status == 409
    body = await resp.json()
    assert body["type"] == PROBLEM + "not-in-rehearsal"
    assert body["mode"] == "live"
    assert body["detail"] == (
        "the event is not in rehearsal, so there is nothing to end: it is live already"
    )
    assert app.snapshot() == before


async def test_rehearsal_during_rehearsal_is_409_and_keeps_its_start(app: Appliance) -> None:
    """A second rehearsal: 409 already-in-rehearsal; the first one's start time stays."""
    first = await (await app.post("/v1/event/rehearsal", token=TECH_TOKEN)).json()
    before = app.snapshot()
    resp = await app.post("/v1/event/rehearsal", token=TECH_TOKEN)
    assert resp.status == 409
    body = await resp.json()
    assert (body["type"], body["mode"]) == (PROBLEM + "already-in-rehearsal", "rehearsal")
    assert (await _get(app, "/v1/event"))["since"] == first["since"]
    assert app.snapshot() == before


async def test_switches_take_no_body_and_need_a_tech_token(app: Appliance) -> None:
    """A body on a switch is 422 naming it; a kiosk token is 403; neither changes the mode."""
    resp = await app.post("/v1/event/rehearsal", {"mode": "rehearsal"}, token=TECH_TOKEN)
    assert resp.status == 422
    body = await resp.json()
    assert body["type"] == PROBLEM + "invalid-request"
    assert body["errors"] == [{"loc": "body", "message": "must be empty"}]
    resp = await app.post("/v1/event/rehearsal")  # the kiosk token
    assert resp.status == 403
    assert (await _get(app, "/v1/event"))["mode"] == "live"


async def test_the_mode_survives_a_restart_and_config_acts_once(
    make_appliance: Callable[..., Any],
) -> None:
    """A rehearsal started through the API survives a restart; [event] mode = "rehearsal"
    starts one at the start that brings it, and a go-live is not undone by the next start."""
    async with make_appliance() as app:
        await app.post("/v1/event/rehearsal", token=TECH_TOKEN)
        since = (await _get(app, "/v1/event"))["since"]
    async with make_appliance() as app:
        event = await _get(app, "/v1/event")
        assert (event["mode"], event["since"]) == ("rehearsal", since)
        await app.post("/v1/event/live", token=TECH_TOKEN)
    async with make_appliance(sections={"event": {"mode": "rehearsal"}}) as app:
        event = await _get(app, "/v1/event")
        assert (event["mode"], event["actor"]) == ("rehearsal", "config")
        assert (await _job(app, "cfg-reh-0001"))["rehearsal"] is True
        assert (await app.post("/v1/event/live", token=TECH_TOKEN)).status == 200
    async with make_appliance(sections={"event": {"mode": "rehearsal"}}) as app:
        assert (await _get(app, "/v1/event"))["mode"] == "live"  # the file did not change
        assert (await _job(app, "cfg-live-0001"))["rehearsal"] is False


def _new(key: str) -> NewJob:
    return NewJob(
        id=key.replace("-", "").ljust(32, "0")[:32], idempotency_key=key, request_sha256="0",
        state=JobState.HELD, owner="ann", printer=None, pool="lobby", priority=100, copies=1,
        document_sha256="0", document_bytes=1, token_name="t", correlation_id=None,
    )  # fmt: skip


async def test_event_mode_in_both_store_backends(store: Store) -> None:
    """On SQLite and PostgreSQL: a job takes the mode in force at its INSERT; go-live and
    the cancel are one transaction; a lost go-live cancels nothing."""
    jobs, modes = Jobs(store), EventModes(store)
    live = await jobs.insert(_new("aaaaaaaa-live"), 1.0, "t")
    assert live is not None
    assert live.rehearsal is False
    assert await modes.start_rehearsal(now=2.0, actor="tech") is not None
    assert await modes.start_rehearsal(now=2.5, actor="tech") is None
    reh = await jobs.insert(_new("bbbbbbbb-reh"), 3.0, "t")
    assert reh is not None
    assert reh.rehearsal is True
    went = await modes.go_live(now=4.0, actor="tech", why="over")
    assert went is not None
    assert (went.mode.mode, went.mode.since, went.cancelled) == ("live", 4.0, [reh.id])
    assert await modes.go_live(now=5.0, actor="tech", why="over") is None
    assert (await jobs.get(live.id)).state is JobState.HELD  # type: ignore[union-attr]
    assert (await jobs.get(reh.id)).state is JobState.CANCELLED  # type: ignore[union-attr]
    assert (await modes.current()).since == 4.0
    assert await jobs.count_by_state(rehearsal=True) == {
        **dict.fromkeys(JobState, 0),
        JobState.CANCELLED: 1,
    }


@pytest.fixture
def slow_printer(tmp_path: Path) -> Any:
    from tests.rig_fixtures import one_printer

    yield from one_printer(tmp_path / "slow")


async def test_go_live_during_a_run_lets_the_job_in_hand_finish_as_rehearsal(
    slow_printer: Rig, tmp_path: Path
) -> None:
    """Go-live while a rehearsal job prints on a real printer: that job ends DONE, still a
    rehearsal job (and is not a live figure); the one queued behind it is cancelled; the
    next job is live and prints."""
    name = slow_printer.printers[0].name
    slow_printer.set_speed(name, 1.5)
    cfg = rig_config(tmp_path / "data", slow_printer, pool=None)
    async with appliance(cfg) as (run, client):
        assert (await client.post("/v1/event/rehearsal", tech=True))[0] == 200
        first = await client.submit("reh-run-0001", printer=name, hold=False)
        await client.wait_states([first["id"]], {"PRINTING"})
        queued = await client.submit("reh-run-0002", printer=name, hold=False)
        status, live = await client.post("/v1/event/live", tech=True)
        assert status == 200
        assert live["cancelled"] == [queued["id"]]
        after = await client.submit("live-run-0001", printer=name, hold=False)
        assert after["rehearsal"] is False
        done = await client.wait_states([first["id"], after["id"]], {"DONE"}, timeout_s=30)
        assert [(j["state"], j["rehearsal"]) for j in done] == [("DONE", True), ("DONE", False)]
        assert (await client.job(queued["id"]))["state"] == "CANCELLED"
        assert await eventually(
            lambda: (
                {p.job_name for p in slow_printer.printed(name)}
                >= {f"edgeprint-{first['id']}", f"edgeprint-{after['id']}"}
            ),
            "both badges on paper",
        )
        assert f"edgeprint-{queued['id']}" not in {p.job_name for p in slow_printer.printed(name)}
        stats = await run.service.views.stats()
        assert stats.jobs_by_state[JobState.DONE] == 1  # the live one only
        printed = run.service.metrics.registry.get_sample_value(
            "edgeprint_jobs_printed_total", {"printer": name}
        )
        assert printed == 1


async def test_cli_rehearsal_go_live_and_event(
    app: Appliance, capsys: pytest.CaptureFixture[str]
) -> None:
    """edgeprint rehearsal / event / go-live print what happened; go-live when live exits 1
    with the appliance's words; --json is the API's answer."""
    from edgeprint import cli

    async def run(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = await asyncio.to_thread(cli.main, [*argv, "--url", app.url, "--token", TECH_TOKEN])
        out = capsys.readouterr()
        return code, out.out, out.err

    code, out, err = await run("rehearsal")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "rehearsal started: every new job is a test until edgeprint go-live"
    assert lines[1].startswith("event: rehearsal since 20")
    assert lines[1].endswith(" (set by tech-1)")
    assert lines[2] == "rehearsal jobs: none"
    held = await _job(app, "cli-reh-0001")
    code, out, _ = await run("event")
    assert (code, out.splitlines()[1]) == (0, "rehearsal jobs: HELD 1")
    code, out, err = await run("go-live")
    assert (code, err) == (0, "")
    assert out.splitlines()[:2] == [
        "live: the rehearsal is over; 1 rehearsal job(s) cancelled",
        f"  {held['id']}",
    ]
    code, out, err = await run("go-live")
    assert (code, out) == (1, "")
    assert err.startswith(
        "edgeprint: 409 Conflict: the event is not in rehearsal, so there is nothing to end: "
        "it is live since 20"
    )
    code, out, _ = await run("event", "--json")
    assert code == 0
    assert json.loads(out)["mode"] == "live"


async def test_status_says_rehearsal(app: Appliance, capsys: pytest.CaptureFixture[str]) -> None:
    """edgeprint status shows a REHEARSAL line while in one (its counts are live jobs only)."""
    from edgeprint import cli

    await app.post("/v1/event/rehearsal", token=TECH_TOKEN)
    await _job(app, "status-reh-0001")
    capsys.readouterr()
    code = await asyncio.to_thread(cli.main, ["status", "--url", app.url, "--token", TECH_TOKEN])
    out = capsys.readouterr().out
    assert code == 0
    assert "HELD 0" in out
    lines = out.splitlines()
    [at] = [i for i, x in enumerate(lines) if x.startswith("REHEARSAL")]
    line = lines[at] + " " + lines[at + 1].strip()  # folded at 80 columns
    assert line.startswith("REHEARSAL since 20")
    assert line.endswith(": 1 test job(s), counted apart; edgeprint go-live ends it")
