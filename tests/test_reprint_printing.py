"""A reprint on real printers (two ippeveprinter): printed exactly once per Idempotency-Key,
as the printers' own logs show, and the story of a printed job (issue 24)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import psycopg

from testbed.config import KIOSK_TOKEN
from testbed.rig import Rig
from tests.polling import eventually
from tests.printing import Client, appliance, assert_each_printed_once, printed_names, rig_config


async def _reprint(kiosk: Client, job_id: str, key: str, reason: str) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {KIOSK_TOKEN}", "Idempotency-Key": key}
    async with kiosk.http.post(
        f"{kiosk.url}/v1/jobs/{job_id}/reprint", json={"reason": reason}, headers=headers
    ) as r:
        return r.status, await r.json()


async def _story(kiosk: Client, job_id: str) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {KIOSK_TOKEN}"}
    async with kiosk.http.get(f"{kiosk.url}/v1/jobs/{job_id}/events", headers=headers) as r:
        assert r.status == 200
        body: dict[str, Any] = await r.json()
        return body


async def test_a_reprint_prints_once_per_key_on_real_printers(
    tmp_path: Path, printers: Rig
) -> None:
    """Ten concurrent reprint calls with one key, then two with another: two new jobs, and
    the printers' logs show the original and each reprint printed once, nothing else."""
    async with appliance(rig_config(tmp_path / "data", printers)) as (_run, kiosk):
        original = await kiosk.submit("badge-ann-0001", pool="lobby", hold=False)
        await kiosk.wait_states([original["id"]], {"DONE"})

        answers = await asyncio.gather(
            *(_reprint(kiosk, original["id"], "desk-reprint-01", "badge lost") for _ in range(10))
        )
        assert sorted(s for s, _ in answers) == [200] * 9 + [201]
        [first] = {b["id"] for _, b in answers}
        second = await asyncio.gather(
            *(_reprint(kiosk, original["id"], "desk-reprint-02", "damaged") for _ in range(2))
        )
        [other] = {b["id"] for _, b in second}
        await kiosk.wait_states([first, other], {"DONE"})
        again, body = await _reprint(kiosk, original["id"], "desk-reprint-01", "badge lost")
        assert (again, body["id"], body["state"]) == (200, first, "DONE")

        expected = {f"edgeprint-{i}" for i in (original["id"], first, other)}

        def logged() -> dict[str, list[str]] | None:
            names = printed_names(printers)
            return names if expected <= set(names) else None

        names = await eventually(logged, "the printers' logs show the original and both reprints")
        assert set(names) == expected
        assert all(len(names[n]) == 1 for n in expected), names
        assert (await kiosk.job(original["id"]))["reprints"] == [first, other]

        # the story of the reprint: made by the desk, claimed, its copy on a printer (with
        # its IPP job-id) and what the printer said that settled it, DONE
        story = await _story(kiosk, first)
        entries = story["entries"]
        assert entries[0]["words"] == (
            f"Accepted as RELEASED from kiosk-1 (reprint of {original['id']}: badge lost)"
        )
        kinds = [e["kind"] for e in entries]
        assert kinds[-1] == "state"
        assert entries[-1]["to_state"] == "DONE"
        made = next(e for e in entries if e["kind"] == "copy-made")
        settled = next(e for e in entries if e["kind"] == "copy-settled")
        assert made["printer"] == story["job"]["printed_on"] == names[f"edgeprint-{first}"][0]
        assert made["printer_job_id"] is not None
        assert settled["copy_state"] == "printed"
        assert settled["settled_by"] == story["job"]["settled_by"]
        assert kinds.index("copy-made") < kinds.index("copy-settled") < len(kinds) - 1
        times = [e["at"] for e in entries]
        assert times == sorted(times)


async def test_reprints_with_distinct_keys_racing_for_the_limit_print_that_many(
    tmp_path: Path, printers: Rig
) -> None:
    """`[release] max_reprints = 3`; eight concurrent reprint calls, each with its own key:
    three are made (201), five are refused 409 `reprint-limit` with the count; the printers'
    logs show the original and the three reprints, each printed once, and nothing else."""
    cfg = rig_config(tmp_path / "data", printers)
    cfg["release"] = {"max_reprints": 3}
    async with appliance(cfg) as (_run, kiosk):
        original = await kiosk.submit("badge-race-0001", pool="lobby", hold=False)
        await kiosk.wait_states([original["id"]], {"DONE"})
        answers = await asyncio.gather(
            *(_reprint(kiosk, original["id"], f"race-key-{i:02d}", "lost") for i in range(8))
        )
        assert sorted(s for s, _ in answers) == [201] * 3 + [409] * 5
        made = [b["id"] for s, b in answers if s == 201]
        for status, body in answers:
            if status == 409:
                assert body["type"].endswith(":reprint-limit"), body
                assert (body["count"], body["limit"], body["state"]) == (3, 3, "DONE")
        await kiosk.wait_states(made, {"DONE"}, timeout_s=60)
        assert sorted((await kiosk.job(original["id"]))["reprints"]) == sorted(made)
    assert_each_printed_once(printers, [original["id"], *made])


async def test_a_reprint_with_the_store_in_postgresql(
    tmp_path: Path, printers: Rig, pg_url: str
) -> None:
    """On PostgreSQL: the reprint's document is stored in the database under its own id (a
    replacement appliance has it), its events and link are there, and it prints once."""
    cfg = rig_config(tmp_path / "data", printers)
    cfg["store"] = {"url": pg_url}
    async with appliance(cfg) as (_run, kiosk):
        original = await kiosk.submit("pg-badge-0001", pool="lobby", hold=False)
        await kiosk.wait_states([original["id"]], {"DONE"})
        status, new = await _reprint(kiosk, original["id"], "pg-reprint-0001", "damaged")
        assert status == 201
        await kiosk.wait_states([new["id"]], {"DONE"})
        assert (await kiosk.job(original["id"]))["reprints"] == [new["id"]]
    with psycopg.connect(pg_url) as conn:
        chunks = dict(
            conn.execute(
                "SELECT job_id, string_agg(encode(chunk, 'hex'), '' ORDER BY seq) "
                "FROM documents GROUP BY job_id"
            ).fetchall()
        )
        notes = conn.execute(
            "SELECT reason FROM job_events WHERE job_id = %s AND from_state = 'DONE'",
            (original["id"],),
        ).fetchall()
    assert chunks[new["id"]] == chunks[original["id"]]
    assert notes == [(f"reprinted as {new['id']}: damaged",)]
    names = printed_names(printers)
    for job_id in (original["id"], new["id"]):
        assert len(names[f"edgeprint-{job_id}"]) == 1
