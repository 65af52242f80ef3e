"""Clocks that jump (issue 27 §3): the appliance as a real process under libfaketime, its wall
clock stepped while jobs are held, released, printing on real printers and backing off.

libfaketime (Debian ``faketime``) is preloaded into the appliance only, reading its offset from
a file the test rewrites (``FAKETIME_NO_CACHE``); CLOCK_MONOTONIC stays real
(``FAKETIME_DONT_FAKE_MONOTONIC``), as it does on a box whose NTP steps the wall clock.
Ground truth of what printed is each printer's own log.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from testbed.config import TECH_TOKEN
from testbed.proc import ServeProcess
from testbed.rig import Rig
from tests.conftest import to_toml
from tests.polling import eventually
from tests.printing import Client, assert_each_printed_once, rig_config
from tests.rig_fixtures import in_ci

pytestmark = pytest.mark.slow

LIBFAKETIME = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")
DAY = 86_400
FIFTY_YEARS = 50 * 365 * DAY
#: The hold TTL and document retention, in seconds of running: longer than a case's steps take.
TTL_S = 25.0
#: A retry's back-off (retry_base_s = retry_max_s; jitter takes it to 50-100 %).
BACKOFF_S = 4.0


def require_libfaketime() -> Path:
    if LIBFAKETIME.exists():
        return LIBFAKETIME
    why = f"libfaketime not found at {LIBFAKETIME}: install the Debian package faketime"
    if in_ci():
        pytest.fail(f"{why}; CI is set, so this is a failure, not a skip", pytrace=False)
    pytest.skip(f"{why}; set CI=1 to make this a failure")


@dataclass
class FakeClock:
    """The appliance's wall-clock offset from real time, in a file libfaketime reads anew at
    every reading."""

    path: Path

    def set(self, offset_s: int) -> None:
        tmp = self.path.with_suffix(".new")
        tmp.write_text(f"{offset_s:+d}\n")
        tmp.replace(self.path)

    def env(self) -> dict[str, str]:
        return {
            "LD_PRELOAD": str(require_libfaketime()),
            "FAKETIME_TIMESTAMP_FILE": str(self.path),
            "FAKETIME_NO_CACHE": "1",
            "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        }


def _seconds(rfc3339: str) -> float:
    return datetime.fromisoformat(rfc3339.replace("Z", "+00:00")).timestamp()


def _config(tmp_path: Path, rig: Rig) -> Path:
    cfg = rig_config(
        tmp_path / "data", rig, pool=None, retry_base_s=BACKOFF_S, retry_max_s=BACKOFF_S
    )
    cfg["retention"] = {"hold_ttl_s": TTL_S, "document_retention_s": TTL_S, "interval_s": 0.5}
    path = tmp_path / "config.toml"
    path.write_text(to_toml(cfg))
    return path


def _log_events(serve: ServeProcess, event: str) -> list[dict[str, Any]]:
    found = []
    for line in serve.log_path.read_text(errors="replace").splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and rec.get("event") == event:
            found.append(rec)
    return found


async def _metric(http: aiohttp.ClientSession, url: str, name: str) -> float:
    async with http.get(f"{url}/metrics") as r:
        text = await r.text()
    match = re.search(rf"^{name} (\S+)$", text, re.MULTILINE)
    assert match is not None, f"{name} not in /metrics"
    return float(match.group(1))


@pytest.fixture
def serving(tmp_path: Path, printers: Rig) -> Iterator[tuple[ServeProcess, FakeClock]]:
    clock = FakeClock(tmp_path / "faketime")
    clock.set(0)
    serve = ServeProcess(_config(tmp_path, printers), tmp_path / "serve.log", env=clock.env())
    try:
        yield serve, clock
    finally:
        serve.kill()


@pytest.mark.parametrize(
    ("before", "after"),
    [(-3 * DAY, 0), (0, -3600), (0, FIFTY_YEARS)],
    ids=["booted-3-days-behind-then-ntp", "back-one-hour", "forward-fifty-years"],
)
async def test_a_clock_step_expires_purges_and_times_out_nothing(
    tmp_path: Path,
    printers: Rig,
    serving: tuple[ServeProcess, FakeClock],
    before: int,
    after: int,
) -> None:
    """Held, finished, printing and backing-off jobs ride through a wall-clock step: nothing
    expires, is purged or times out; the back-off still takes seconds; times recorded before
    the step read the same after it; the step is logged once and exported; and then the hold
    TTL and retention still end a job after their time of running."""
    serve, clock = serving
    clock.set(before)
    printers.set_speed("printer-02", 8.0)  # a job is printing across the step
    async with aiohttp.ClientSession() as http:
        with serve.start():
            kiosk = Client(http, serve.url)
            done = await kiosk.submit("done-0001", printer="printer-01", hold=False)
            # libfaketime steers the appliance: its answer's time is the faked one
            assert abs(_seconds(done["created_at"]) - (time.time() + before)) < 60
            [done] = await kiosk.wait_states([done["id"]], {"DONE"}, timeout_s=20)
            done_at = time.monotonic()
            printing = await kiosk.submit("printing-0001", printer="printer-02", hold=False)
            await kiosk.wait_states([printing["id"]], {"PRINTING"}, timeout_s=10)
            held = await kiosk.submit("held-0001", printer="printer-01")
            held_at = time.monotonic()
            later = await kiosk.submit("held-0002", printer="printer-01")
            retried = await kiosk.submit("retry-0001", printer="printer-01")
            printers.fault("printer-01", "abort", once=True, match=retried["id"])
            assert (await kiosk.post(f"/v1/jobs/{retried['id']}/release"))[0] == 200

            async def backing_off() -> bool:
                job = await kiosk.job(retried["id"])
                return bool(job["state"] == "RELEASED" and job["attempts"] >= 1)

            await eventually(backing_off, "the aborted job is in its retry back-off")
            seen = {j: await kiosk.job(j) for j in (done["id"], held["id"], printing["id"])}

            assert seen[printing["id"]]["state"] == "PRINTING", "the case took too long to step"
            clock.set(after)
            # the job in its back-off has waited seconds, not the step (released_run)
            waited = await _metric_labelled(
                http, serve.url, 'edgeprint_oldest_waiting_seconds{printer="printer-01"}'
            )
            if (await kiosk.job(retried["id"]))["state"] == "RELEASED":  # still waiting
                assert 0 < waited < 60, waited
            # the back-off ends seconds after it began, whatever the step
            await kiosk.wait_states([retried["id"]], {"DONE"}, timeout_s=BACKOFF_S + 15)
            await kiosk.wait_states([printing["id"]], {"DONE"}, timeout_s=30)
            status, released = await kiosk.post(f"/v1/jobs/{later['id']}/release")
            assert (status, released["state"]) == (200, "RELEASED")
            await kiosk.wait_states([later["id"]], {"DONE"}, timeout_s=20)
            fresh = await kiosk.submit("after-0001", printer="printer-01")
            assert abs(_seconds(fresh["created_at"]) - (time.time() + after)) < 60
            assert time.monotonic() - held_at < TTL_S - 2, "the case took too long to judge"

            # nothing expired or was purged because of the step alone
            assert (await kiosk.job(held["id"]))["state"] == "HELD"
            assert (tmp_path / "data" / "spool" / f"{done['id']}.pdf").exists()
            # times recorded before the step read the same after it
            for job_id, was in seen.items():
                now = await kiosk.job(job_id)
                assert now["created_at"] == was["created_at"]
                assert now["released_at"] == was["released_at"]
            assert (await kiosk.job(done["id"]))["finished_at"] == done["finished_at"]

            # the step: logged once, exported
            steps = _log_events(serve, "clock_step")
            assert len(steps) == 1, steps
            assert steps[0]["seconds"] == pytest.approx(after - before, abs=2)
            gauge = await _metric(http, serve.url, "edgeprint_clock_step_seconds")
            assert gauge == pytest.approx(after - before, abs=2)
            assert await _metric(http, serve.url, "edgeprint_clock_steps_total") == 1

            # and the hold TTL and retention still end a job after their time of running
            [expired] = await kiosk.wait_states([held["id"]], {"EXPIRED"}, timeout_s=TTL_S + 10)
            assert time.monotonic() - held_at >= TTL_S - 1
            assert expired["created_at"] == seen[held["id"]]["created_at"]
            spooled = tmp_path / "data" / "spool" / f"{done['id']}.pdf"

            async def purged() -> bool:
                return not spooled.exists()

            await eventually(purged, "the finished job's document is deleted", timeout_s=15)
            assert time.monotonic() - done_at >= TTL_S - 1
            assert serve.terminate() == 0
    assert_each_printed_once(printers, [done["id"], printing["id"], retried["id"], later["id"]])


#: Short leases, as tests/test_cluster.py's: a takeover costs about two seconds.
CLUSTER = {"lease_s": 1.5, "heartbeat_s": 0.5, "margin_s": 0.25}


def _cluster_config(tmp_path: Path, rig: Rig, url: str, name: str) -> Path:
    cfg = rig_config(tmp_path / name, rig, pool=None)
    cfg["printers"] = [p for p in cfg["printers"] if p["name"] == "printer-02"]
    cfg["store"] = {"url": url, "shared": True}
    cfg["cluster"] = {"appliance_id": name, **CLUSTER}
    cfg["retention"] = {"hold_ttl_s": 600.0, "document_retention_s": 600.0, "interval_s": 0.5}
    path = tmp_path / f"{name}.toml"
    path.write_text(to_toml(cfg))
    return path


async def _owner(http: aiohttp.ClientSession, url: str) -> tuple[str | None, int]:
    headers = {"Authorization": f"Bearer {TECH_TOKEN}"}
    async with http.get(f"{url}/v1/printers", headers=headers) as r:
        assert r.status == 200
        body = await r.json()
    [printer] = [p for p in body["printers"] if p["name"] == "printer-02"]
    return printer["owner"], printer["lease_epoch"] or 0


@pytest.mark.parametrize("step", [FIFTY_YEARS, -3600], ids=["forward-fifty-years", "back-one-hour"])
async def test_a_step_during_a_lease_takeover_takes_over_once_fenced(
    tmp_path: Path, printers: Rig, pg_url: str, step: int
) -> None:
    """Two appliances on PostgreSQL; b drives printer-02. a's wall clock steps while b prints
    a job: a takes nothing from b. Then b is SIGKILLed while printing another and a's clock
    steps back an hour at that instant: a takes the lease over once (epoch 2, one takeover),
    each job prints once, a's held job neither expires nor moves, a logs each step once."""
    clock = FakeClock(tmp_path / "faketime")
    clock.set(0)
    b = ServeProcess(_cluster_config(tmp_path, printers, pg_url, "b"), tmp_path / "b.log")
    a = ServeProcess(
        _cluster_config(tmp_path, printers, pg_url, "a"), tmp_path / "a.log", env=clock.env()
    )
    takeovers = 'edgeprint_printer_takeovers_total{printer="printer-02"}'
    printers.set_speed("printer-02", 4.0)
    async with aiohttp.ClientSession() as http:
        with b.start():
            kiosk_b = Client(http, b.url)

            async def b_owns() -> bool:
                return (await _owner(http, b.url))[0] == "b"

            await eventually(b_owns, "b holds printer-02's lease")
            with a.start():
                kiosk_a = Client(http, a.url)
                held = await kiosk_a.submit("held-0001", printer="printer-02")
                first = await kiosk_b.submit("printing-0001", printer="printer-02", hold=False)
                await kiosk_b.wait_states([first["id"]], {"PRINTING"}, timeout_s=10)
                clock.set(step)  # b alive: a's step alone must take nothing from it

                def a_saw_the_step() -> bool:
                    return len(_log_events(a, "clock_step")) == 1

                await eventually(a_saw_the_step, "a logs the step", timeout_s=10)
                # the job prints for seconds after the step: many of a's lease beats
                await kiosk_b.wait_states([first["id"]], {"DONE"}, timeout_s=30)
                assert await _owner(http, a.url) == ("b", 1)
                assert await _metric_labelled(http, a.url, takeovers) == 0

                second = await kiosk_b.submit("printing-0002", printer="printer-02", hold=False)
                await kiosk_b.wait_states([second["id"]], {"PRINTING"}, timeout_s=10)
                b.kill()
                clock.set(step - 3600)  # and a step back by an hour during the takeover

                async def a_owns() -> tuple[str | None, int] | None:
                    owner = await _owner(http, a.url)
                    return owner if owner[0] == "a" else None

                assert await eventually(a_owns, "a takes printer-02 over", timeout_s=20) == (
                    "a", 2,
                )  # fmt: skip
                await kiosk_a.wait_states([second["id"]], {"DONE"}, timeout_s=40)
                after = await kiosk_a.job(held["id"])
                assert after["state"] == "HELD"
                assert after["created_at"] == held["created_at"]
                assert await _metric_labelled(http, a.url, takeovers) == 1
                steps = [e["seconds"] for e in _log_events(a, "clock_step")]
                assert steps == [pytest.approx(step, abs=2), pytest.approx(-3600, abs=2)]
                assert a.terminate() == 0
    assert_each_printed_once(printers, [first["id"], second["id"]])


async def _metric_labelled(http: aiohttp.ClientSession, url: str, series: str) -> float:
    """One labelled series of /metrics (0 when it is not there yet: no such event so far)."""
    async with http.get(f"{url}/metrics") as r:
        text = await r.text()
    for line in text.splitlines():
        if line.startswith(series + " "):
            return float(line.split()[-1])
    return 0.0
