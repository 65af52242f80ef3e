"""/metrics: parsed with prometheus-client's own parser, values move as jobs flow."""

from __future__ import annotations

from pathlib import Path

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from testbed.rig import Rig
from tests.printing import appliance, rig_config


async def scrape(
    http: aiohttp.ClientSession, url: str
) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample as {(name, sorted labels): value}."""
    async with http.get(f"{url}/metrics") as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = await resp.text()
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


async def test_metrics_move_as_jobs_flow(tmp_path: Path, printers: Rig) -> None:
    """Accepted, printed, jobs by state, queue gauges, IPP latency, printer up and store
    commits all move."""
    async with appliance(rig_config(tmp_path / "data", printers)) as (_, kiosk):
        before = await scrape(kiosk.http, kiosk.url)
        assert before[("edgeprint_jobs", (("state", "DONE"),))] == 0
        held = await kiosk.submit("metrics-held", pool="lobby")
        waiting = await scrape(kiosk.http, kiosk.url)
        assert waiting[("edgeprint_jobs", (("state", "HELD"),))] == 1
        ids = [
            (await kiosk.submit(f"metrics-{i:04d}", pool="lobby", hold=False))["id"]
            for i in range(6)
        ]
        await kiosk.post(f"/v1/jobs/{held['id']}/release")
        await kiosk.post(f"/v1/jobs/{held['id']}/release")  # a conflict
        await kiosk.submit("metrics-0000", pool="lobby", hold=False)  # a duplicate
        await kiosk.wait_states([*ids, held["id"]], {"DONE"})
        after = await scrape(kiosk.http, kiosk.url)
    assert after[("edgeprint_jobs", (("state", "DONE"),))] == 7
    printed = sum(v for (n, _), v in after.items() if n == "edgeprint_jobs_printed_total")
    assert printed == 7
    assert after[("edgeprint_jobs_accepted_total", (("state", "RELEASED"),))] == 6
    assert after[("edgeprint_duplicates_suppressed_total", ())] == 1
    assert after[("edgeprint_release_conflicts_total", ())] == 1
    assert after[("edgeprint_release_to_completed_seconds_count", ())] == 7
    assert after[("edgeprint_printer_up", (("printer", "printer-01"),))] == 1
    assert after[("edgeprint_printer_healthy", (("printer", "printer-02"),))] == 1
    assert after[("edgeprint_waiting_jobs", (("printer", "printer-01"),))] == 0
    assert after[("edgeprint_pool_waiting_jobs", (("pool", "lobby"),))] == 0
    assert after[("edgeprint_dead_letter_jobs", ())] == 0
    # one task per printer's worker at least, counted in the loop the scrape ran in
    assert len(printers) <= after[("edgeprint_event_loop_tasks", ())] < 1000
    # Every write went through a group commit of at least one statement.
    commits = after[("edgeprint_store_commit_statements_count", ())]
    assert commits > before[("edgeprint_store_commit_statements_count", ())]
    assert after[("edgeprint_store_commit_statements_sum", ())] >= commits
    create_jobs = [
        v for (n, labels), v in after.items()
        if n == "edgeprint_ipp_request_duration_seconds_count"
        and ("operation", "Create-Job") in labels and ("outcome", "ok") in labels
    ]  # fmt: skip
    assert sum(create_jobs) == 7
    assert not any("job_id" in dict(labels) for (_, labels) in after)


async def test_oldest_waiting_age_shows_a_stuck_head(tmp_path: Path, printers: Rig) -> None:
    """A paused printer's waiting job makes edgeprint_oldest_waiting_seconds grow."""
    async with appliance(rig_config(tmp_path / "data", printers, pool=None)) as (_, kiosk):
        status, _ = await kiosk.post("/v1/printers/printer-01/pause", tech=True)
        assert status == 200
        await kiosk.submit("stuck-head-01", printer="printer-01", hold=False)
        first = await scrape(kiosk.http, kiosk.url)
        second = await scrape(kiosk.http, kiosk.url)
    key = ("edgeprint_oldest_waiting_seconds", (("printer", "printer-01"),))
    assert 0 < first[key] <= second[key]
    assert first[("edgeprint_waiting_jobs", (("printer", "printer-01"),))] == 1
