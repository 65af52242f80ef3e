"""The release page's ``POST /release/{name}/print`` keeps what a release does (issue 24):
admission (a full queue leaves the job HELD and says so in plain words), the locks (a
locked job, a locked address) and failover (a pool printer that is down: the job goes to
a healthy peer and prints once). Real HTTP against a real appliance on real printers
(ippeveprinter); the printers' own logs say what came out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgeprint.service import Caller
from testbed.config import KIOSK_TOKEN, TECH_TOKEN
from testbed.rig import Rig
from tests.polling import eventually
from tests.printing import Client, appliance, assert_each_printed_once, rig_config

PROBLEM = "urn:edgeprint:problem:"
CODE = "48213907"
PIN = "739164"
TECH = Caller("tech-1", "tech")


async def _code(kiosk: Client, owner: str, code: str) -> None:
    headers = {"Authorization": f"Bearer {KIOSK_TOKEN}"}
    url = f"{kiosk.url}/v1/owners/{owner}"
    async with kiosk.http.put(url, json={"release_code": code}, headers=headers) as r:
        assert r.status == 200, await r.text()


async def _page(kiosk: Client, name: str, verb: str, body: dict[str, Any]) -> tuple[int, Any]:
    """A tap on the release page: no token, the credential is in the body."""
    async with kiosk.http.post(f"{kiosk.url}/release/{name}/{verb}", json=body) as r:
        return r.status, await r.json(content_type=None)


async def _states(kiosk: Client, ids: list[str]) -> list[str]:
    return [(await kiosk.job(i))["state"] for i in ids]


async def test_a_full_queue_leaves_the_job_held_and_says_so(tmp_path: Path, printers: Rig) -> None:
    """printer-01 alone (no pool), paused, `high_water = 1`: the first job released at its
    page waits there; the second is refused by admission: outcome `queue-full`, the page's
    sentence says it is still waiting and when to try again, the job stays HELD with no
    event. After a resume, a second tap sends it; each printed once on printer-01."""
    cfg = rig_config(tmp_path / "data", printers, pool=None)
    cfg["printers"][0]["high_water"] = 1
    async with appliance(cfg) as (run, kiosk):
        await _code(kiosk, "ann", CODE)
        await run.service.printers.set_paused("printer-01", True, TECH)
        first = (await kiosk.submit("full-0001", printer="printer-01"))["id"]
        second = (await kiosk.submit("full-0002", printer="printer-01"))["id"]

        status, out = await _page(kiosk, "printer-01", "print", {"code": CODE, "jobs": [first]})
        assert (status, out["message"]) == (200, "1 job sent to printer-01"), out
        events_before = await run.service.jobs.events(second)
        status, out = await _page(kiosk, "printer-01", "print", {"code": CODE, "jobs": [second]})
        assert status == 200, out
        assert out["outcomes"] == [
            {"job": second, "outcome": "queue-full", "state": None, "printer": None,
             "pool": None, "detail": "printer-01 is full, try again in 5 s"}
        ]  # fmt: skip
        assert out["message"] == "1 job still waiting: printer-01 is full, try again in 5 s"
        assert await _states(kiosk, [first, second]) == ["RELEASED", "HELD"]
        assert await run.service.jobs.events(second) == events_before
        # the lookup still lists it as the person's to release
        status, found = await _page(kiosk, "printer-01", "lookup", {"code": CODE})
        assert [j["id"] for j in found["jobs"]] == [second]

        await run.service.printers.set_paused("printer-01", False, TECH)
        await kiosk.wait_states([first], {"DONE"}, timeout_s=60)
        status, out = await _page(kiosk, "printer-01", "print", {"code": CODE, "all": True})
        assert (status, out["message"]) == (200, "1 job sent to printer-01"), out
        await kiosk.wait_states([second], {"DONE"}, timeout_s=60)
    assert_each_printed_once(printers, [first, second])
    assert {p.job_name for p in printers.printed("printer-01")} == {
        f"edgeprint-{first}",
        f"edgeprint-{second}",
    }


async def test_a_locked_job_and_a_locked_address_answer_locked(
    tmp_path: Path, printers: Rig
) -> None:
    """A job whose PIN was guessed wrong `max_pin_failures` times at the API answers 423
    `release-locked` at the page's print, even with its right PIN; an address locked by
    wrong codes answers 429 `release-locked` with Retry-After, even with the right code.
    Nothing is released, nothing printed."""
    cfg = rig_config(tmp_path / "data", printers)
    cfg["release"] = {"max_pin_failures": 3, "pin_lockout_s": 300}
    async with appliance(cfg) as (run, kiosk):
        await _code(kiosk, "ann", CODE)
        pinned = (await kiosk.submit("lock-0001", pool="lobby", release_pin=PIN))["id"]
        plain = (await kiosk.submit("lock-0002", pool="lobby"))["id"]
        for guess in ("000001", "000002", "000003"):  # at the API, with the kiosk's token
            status, _ = await kiosk.post(f"/v1/jobs/{pinned}/release", {"pin": guess})
            assert status == 403
        status, problem = await _page(
            kiosk, "printer-01", "print", {"pin": PIN, "job": pinned, "all": True}
        )
        assert (status, problem["type"], problem["job_id"]) == (
            423, PROBLEM + "release-locked", pinned,
        )  # fmt: skip
        # by code: the locked job is not sent (it has its own PIN)
        status, out = await _page(kiosk, "printer-01", "print", {"code": CODE, "jobs": [pinned]})
        assert status == 200, out
        assert [(o["job"], o["outcome"]) for o in out["outcomes"]] == [(pinned, "pin-required")]
        assert await _states(kiosk, [pinned, plain]) == ["HELD", "HELD"]

        # the address: the PIN tried at the locked job counted as a wrong try (its job was
        # not opened), the right code gave back only its own; two wrong codes make three
        for wrong in ("11111111", "22222222"):
            status, problem = await _page(
                kiosk, "printer-01", "print", {"code": wrong, "all": True}
            )
            assert (status, problem["type"]) == (403, PROBLEM + "credential-invalid")
        async with kiosk.http.post(
            f"{kiosk.url}/release/printer-01/print", json={"code": CODE, "all": True}
        ) as r:
            assert r.status == 429
            assert (await r.json(content_type=None))["type"] == PROBLEM + "release-locked"
            assert 1 <= int(r.headers["Retry-After"]) <= 300
        assert await _states(kiosk, [pinned, plain]) == ["HELD", "HELD"]
        for job_id in (pinned, plain):
            assert [e.to_state for e in await run.service.jobs.events(job_id)] == ["HELD"]
    assert printers.printed("printer-01") == printers.printed("printer-02") == []


async def test_a_pool_printer_down_sends_the_job_to_a_healthy_peer(
    tmp_path: Path, printers: Rig
) -> None:
    """printer-01 of pool lobby is switched off (killed). At its own page and at the pool's
    page with printer-01 chosen, the person's jobs are released; admission sends them to
    printer-02, the page's sentence names printer-02 (where to walk to), the pool's page
    suggests printer-02, and each job prints exactly once, on printer-02."""
    cfg = rig_config(tmp_path / "data", printers, request_timeout_s=1.0)
    async with appliance(cfg) as (_run, kiosk):
        await _code(kiosk, "ann", CODE)
        printers.kill("printer-01")

        async def down() -> bool:
            headers = {"Authorization": f"Bearer {TECH_TOKEN}"}
            async with kiosk.http.get(f"{kiosk.url}/v1/printers", headers=headers) as r:
                listed = {p["name"]: p for p in (await r.json())["printers"]}
            return not listed["printer-01"]["healthy"]

        await eventually(down, "printer-01 seen down", timeout_s=20)
        mine = [(await kiosk.submit(f"down-{i:04d}", pool="lobby"))["id"] for i in range(3)]

        status, out = await _page(kiosk, "printer-01", "print", {"code": CODE, "jobs": mine[:1]})
        assert (status, out["message"]) == (200, "1 job sent to printer-02"), out
        assert out["outcomes"][0]["printer"] == "printer-02"
        status, found = await _page(kiosk, "lobby", "lookup", {"code": CODE})
        assert found["suggested"] == "printer-02", found
        status, out = await _page(
            kiosk, "lobby", "print", {"code": CODE, "all": True, "printer": "printer-01"}
        )
        assert (status, out["message"]) == (200, "2 jobs sent to printer-02"), out
        await kiosk.wait_states(mine, {"DONE"}, timeout_s=60)
        for job_id in mine:
            assert (await kiosk.job(job_id))["printed_on"] == "printer-02"
    assert_each_printed_once(printers, mine)
    assert {p.job_name for p in printers.printed("printer-02")} == {f"edgeprint-{i}" for i in mine}
