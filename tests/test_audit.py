"""Who did what (issue 26): every action through the real HTTP API, the IPP queue, the
release page and the upload page is one audit row (when, who, from where, target, outcome)
and one JSON log line; GET /v1/audit lists them to a tech token; nothing holds a secret."""

from __future__ import annotations

import asyncio
import copy
import logging
import re
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from edgeprint.api.audited import AUDITED
from edgeprint.api.auth import token_digest
from edgeprint.api.routes import ROUTES
from edgeprint.ipp.names import Operation, Status, Tag
from edgeprint.ipp.values import attr
from edgeprint.logs import JsonLines
from edgeprint.server import DB_FILE
from edgeprint.store.audit import AuditEntry
from testbed.pdfs import make_pdf
from testbed.rig import Rig
from tests.conftest import KIOSK_TOKEN, TECH_TOKEN, Appliance, config_dict
from tests.ipp_client import IppQueue, status_message
from tests.printing import appliance, rig_config
from tests.test_cli_tech import run_cli
from tests.test_ipp_server import job_id
from tests.test_reload import Appliance as ReloadedAppliance
from tests.test_reprint import done_job, reprint
from tests.test_resolve import dead_job
from tests.test_upload_page import _form_key, _post

PROBLEM = "urn:edgeprint:problem:"
PIN = "918273645546"  # 12 digits: not found by chance in ids or times
CODE = "729384756102"
CARD = "CARD-XQ7-ZZ91"
_UPLOAD_PIN = re.compile(r'<p class="pin" id="pin">([0-9]{6})</p>')


class Trail:
    """The audit rows made since the last look, through GET /v1/audit (tech)."""

    def __init__(self, app: Appliance) -> None:
        self.app = app
        self.seen = 0

    async def new(self) -> list[dict[str, Any]]:
        resp = await self.app.get("/v1/audit?limit=1000", token=TECH_TOKEN)
        assert resp.status == 200
        rows = [r for r in (await resp.json())["entries"] if r["id"] > self.seen]
        self.seen = max([self.seen, *(r["id"] for r in rows)])
        return rows

    async def one(self, **expected: Any) -> dict[str, Any]:
        """Exactly one new row, with ``expected`` fields (source: loopback, by default)."""
        rows = await self.new()
        assert len(rows) == 1, rows
        (row,) = rows
        want = {"source": "127.0.0.1", **expected}
        assert {k: row[k] for k in want} == want, row
        return row


def _audit_count(app: Appliance) -> int:
    with sqlite3.connect(app.data_dir / DB_FILE) as db:
        return int(db.execute("SELECT count(*) FROM audit").fetchone()[0])


async def _held(app: Appliance, key: str, **meta: Any) -> str:
    resp = await app.submit({"owner": "ann", "pool": "lobby", **meta}, key=key)
    assert resp.status == 201
    return str((await resp.json())["id"])


async def test_each_job_action_is_one_row_with_who_where_and_outcome(app: Appliance) -> None:
    trail = Trail(app)
    kiosk = {"actor": "kiosk-1", "actor_kind": "token"}
    tech = {"actor": "tech-1", "actor_kind": "token"}
    held = await _held(app, "audit-key-0001")
    assert await trail.new() == []  # a submission is the job's own story, not an action

    assert (await app.post(f"/v1/jobs/{held}/release")).status == 200
    await trail.one(**kiosk, action="release", target_kind="job", target=held, outcome="done")

    done = await done_job(app, "audit-key-0002")  # made DONE by a resolve: that is a row too
    await trail.one(**tech, action="resolve", target=done["id"], outcome="done")
    resp = await app.post(f"/v1/jobs/{done['id']}/release")
    assert resp.status == 409
    await trail.one(**kiosk, action="release", target=done["id"], outcome="conflict")

    other = await _held(app, "audit-key-0003")
    assert (await app.post(f"/v1/jobs/{other}/cancel")).status == 200
    await trail.one(**kiosk, action="cancel", target=other, outcome="done")
    assert (await app.post(f"/v1/jobs/{other}/cancel")).status == 409
    await trail.one(**kiosk, action="cancel", target=other, outcome="conflict")

    dead = await dead_job(app, "audit-key-0004", reason="poison")
    assert (await app.post(f"/v1/jobs/{dead['id']}/replay", token=TECH_TOKEN)).status == 200
    await trail.one(**tech, action="replay", target=dead["id"], outcome="done")
    # a kiosk may not replay: refused by its role, nothing done, nobody to name beyond that
    assert (await app.post(f"/v1/jobs/{dead['id']}/replay")).status == 403
    assert await trail.new() == []

    # (printer-03 never prints here: the replayed job is cancelled so that it waits no more)
    assert (await app.post(f"/v1/jobs/{dead['id']}/cancel")).status == 200
    await trail.one(**kiosk, action="cancel", target=dead["id"], outcome="done")
    status, _new, _ = await reprint(app, done["id"], {"reason": "badge lost"})
    assert status == 201
    await trail.one(**kiosk, action="reprint", target=done["id"], outcome="done")

    # a PIN job: released with its PIN (the row never holds it); a wrong PIN is refused
    pinned = await _held(app, "audit-key-0005", release_pin=PIN)
    wrong = await app.post(f"/v1/jobs/{pinned}/release", {"pin": "0000"})
    assert wrong.status == 403
    left = (await wrong.json())["detail"].rsplit("; ", 1)[1].split()[0]  # "N more wrong PIN(s)"
    await trail.one(
        **kiosk,
        action="release",
        target=pinned,
        outcome="refused",
        detail=f"pin-mismatch, {left} more lock the release",
    )
    assert int(left) >= 1
    assert (await app.post(f"/v1/jobs/{pinned}/release")).status == 403  # no PIN
    await trail.one(
        **kiosk, action="release", target=pinned, outcome="refused", detail="pin-required"
    )
    assert (await app.post(f"/v1/jobs/{pinned}/release", {"pin": PIN})).status == 200
    await trail.one(**kiosk, action="release", target=pinned, outcome="done")


async def test_printer_owner_and_event_actions_are_one_row_each(app: Appliance) -> None:
    trail = Trail(app)
    tech = {"actor": "tech-1", "actor_kind": "token", "target_kind": "printer"}
    for action in ("pause", "resume", "drain", "media-loaded"):
        resp = await app.post(f"/v1/printers/printer-01/{action}", token=TECH_TOKEN)
        assert resp.status == 200, await resp.text()
        await trail.one(**tech, action=action, target="printer-01", outcome="done")
    # printer-01 is reached over ipp://: there is no certificate to trust (422)
    assert (await app.post("/v1/printers/printer-01/trust", token=TECH_TOKEN)).status == 422
    await trail.one(**tech, action="trust", target="printer-01", outcome="refused")
    assert (await app.post("/v1/printers/printer-99/pause", token=TECH_TOKEN)).status == 404
    await trail.one(**tech, action="pause", target="printer-99", outcome="refused")

    headers = app.headers()
    body = {"release_code": CODE, "card": CARD}
    async with app.http.put(f"{app.url}/v1/owners/ann", json=body, headers=headers) as r:
        assert r.status == 200
    await trail.one(
        actor="kiosk-1", action="credentials-set", target_kind="owner", target="ann", outcome="done"
    )
    async with app.http.delete(f"{app.url}/v1/owners/ann", headers=headers) as r:
        assert r.status == 204
    await trail.one(action="credentials-removed", target="ann", outcome="done")

    assert (await app.post("/v1/event/rehearsal", token=TECH_TOKEN)).status == 200
    await trail.one(actor="tech-1", action="event-rehearsal", target="event", outcome="done")
    assert (await app.post("/v1/event/rehearsal", token=TECH_TOKEN)).status == 409
    await trail.one(action="event-rehearsal", outcome="conflict")
    assert (await app.post("/v1/event/live", token=TECH_TOKEN)).status == 200
    await trail.one(action="event-live", outcome="done")


async def test_a_bulk_call_is_one_row_with_its_counts_and_each_job_keeps_its_event(
    app: Appliance,
) -> None:
    trail = Trail(app)
    ids = [await _held(app, f"bulk-audit-{i:04d}") for i in range(3)]
    assert (await app.post(f"/v1/jobs/{ids[0]}/cancel")).status == 200
    await trail.new()
    resp = await app.post("/v1/jobs/cancel", {"ids": ids, "limit": 3})
    assert resp.status == 200
    row = await trail.one(
        actor="kiosk-1", action="bulk-cancel", target_kind="jobs", target="jobs", outcome="done"
    )
    outcomes = sorted(r["outcome"] for r in (await resp.json())["results"])
    assert row["detail"].startswith("matched 3: ")
    for outcome in set(outcomes):
        assert f"{outcomes.count(outcome)} {outcome}" in row["detail"]
    for job in ids[1:]:  # each job's own story names who cancelled it
        story = await app.running.service.jobs.events(job)
        assert story[-1].to_state == "CANCELLED"
        assert story[-1].actor == "kiosk-1"


async def test_release_page_and_upload_name_the_owner_and_the_address(
    make_appliance: Callable[..., Any],
) -> None:
    async with make_appliance(sections={"release": {"web_upload": True}}) as app:
        trail = Trail(app)
        async with app.http.put(
            f"{app.url}/v1/owners/ann", json={"release_code": CODE}, headers=app.headers()
        ) as r:
            assert r.status == 200
        await trail.new()
        job = await _held(app, "page-audit-0001")
        await trail.new()
        url = f"{app.url}/release/lobby/print"
        async with app.http.post(url, json={"code": "111111", "all": True}) as r:
            assert r.status == 403
        await trail.one(
            actor="release-page:127.0.0.1",
            actor_kind="owner",
            action="release-page-print",
            target="lobby",
            outcome="refused",
        )
        async with app.http.post(url, json={"code": CODE, "all": True}) as r:
            assert r.status == 200, await r.text()
        row = await trail.one(
            actor="ann",
            actor_kind="owner",
            action="release-page-print",
            target_kind="place",
            target="lobby",
            outcome="done",
        )
        assert row["detail"] == "1 of 1 released"
        assert (await app.running.service.get(job)).state.value == "RELEASED"

        status, page, _ = await _post(app, await _form_key(app), make_pdf("up"), owner="bea")
        assert status == 201
        (made,) = await app.running.service.views.list_jobs(owner="bea", limit=5)
        await trail.one(
            actor="bea",
            actor_kind="owner",
            action="web-upload",
            target_kind="job",
            target=made.id,
            outcome="done",
        )
        upload_pin = _UPLOAD_PIN.search(page)
        assert upload_pin is not None
        resp = await app.get("/v1/audit", token=TECH_TOKEN)
        for row in (await resp.json())["entries"]:
            assert upload_pin.group(1) not in (row["actor"], row["target"], row["detail"])
            assert CODE not in str(row)


async def test_an_ipp_cancel_names_the_ipp_user(app: Appliance) -> None:
    trail = Trail(app)
    queue = IppQueue(app.http, app.url, "lobby", user="carl")
    held = await queue.print_job(
        make_pdf("ipp"), job=[attr("job-hold-until", Tag.KEYWORD, "indefinite")]
    )
    assert held.status_code == Status.SUCCESSFUL_OK, status_message(held)
    assert await trail.new() == []
    cancel = await queue.send(
        queue.request(Operation.CANCEL_JOB, attr("job-id", Tag.INTEGER, job_id(held)))
    )
    assert cancel.status_code == Status.SUCCESSFUL_OK, status_message(cancel)
    await trail.one(
        actor="carl", actor_kind="ipp-user", action="cancel", target_kind="job", outcome="done"
    )
    # another user may not cancel it: refused, and recorded as who asked
    stranger = IppQueue(app.http, app.url, "lobby", user="mallory")
    again = await queue.print_job(
        make_pdf("ipp 2"), job=[attr("job-hold-until", Tag.KEYWORD, "indefinite")]
    )
    refused = await stranger.send(
        stranger.request(Operation.CANCEL_JOB, attr("job-id", Tag.INTEGER, job_id(again)))
    )
    assert refused.status_code == Status.CLIENT_ERROR_NOT_AUTHORIZED
    await trail.one(actor="mallory", actor_kind="ipp-user", action="cancel", outcome="refused")


async def test_nothing_secret_in_the_log_or_the_audit(
    app: Appliance, caplog: pytest.LogCaptureFixture
) -> None:
    """A known token, PIN, release code and card go through every door; none of them, nor
    a token's digest, is in any log line or the audit answer."""
    caplog.set_level(logging.DEBUG)
    headers = app.headers()
    body = {"release_code": CODE, "card": CARD}
    async with app.http.put(f"{app.url}/v1/owners/ann", json=body, headers=headers) as r:
        assert r.status == 200
    pinned = await _held(app, "secret-key-0001", release_pin=PIN)
    assert (await app.post(f"/v1/jobs/{pinned}/release", {"pin": "0000"})).status == 403
    assert (await app.post(f"/v1/jobs/{pinned}/release", {"pin": PIN})).status == 200
    other = await _held(app, "secret-key-0002")
    for credential in ({"code": CODE}, {"card": CARD}, {"code": "000000"}):
        async with app.http.post(
            f"{app.url}/release/lobby/print", json={**credential, "all": True}
        ) as r:
            assert r.status in (200, 403)
    assert (await app.running.service.get(other)).state.value == "RELEASED"
    assert (await app.post("/v1/printers/printer-01/pause", token=TECH_TOKEN)).status == 200
    resp = await app.get("/v1/audit?limit=1000", token=TECH_TOKEN)
    answer = await resp.text()
    assert len((await resp.json())["entries"]) >= 6
    lines = "\n".join(JsonLines().format(r) for r in caplog.records)
    assert '"event": "audit"' in lines or '"event":"audit"' in lines
    secrets = (
        KIOSK_TOKEN,
        TECH_TOKEN,
        token_digest(KIOSK_TOKEN),
        token_digest(TECH_TOKEN),
        PIN,
        CODE,
        CARD,
    )
    for secret in secrets:
        assert secret not in lines
        assert secret not in answer


async def test_the_audit_answer_is_for_tech_and_bad_queries_write_nothing(
    app: Appliance,
) -> None:
    trail = Trail(app)
    held = await _held(app, "query-key-0001")
    assert (await app.post(f"/v1/jobs/{held}/release")).status == 200
    (row,) = await trail.new()
    async with app.http.get(f"{app.url}/v1/audit") as r:
        assert r.status == 401
    assert (await app.get("/v1/audit")).status == 403  # a kiosk token
    before = _audit_count(app)
    bad = {
        "limit=0": "query.limit",
        "limit=1001": "query.limit",
        "limit=ten": "query.limit",
        "limit=1&limit=2": "query.limit",
        "since=yesterday": "query.since",
        "since=2026-13-01T00:00:00Z": "query.since",
        "since=2026-12-01T10:00:00": "query.since",
        "actor=%07bell": "query.actor",
        "action=": "query.action",
        "colour=red": "query.colour",
    }
    for query, field in bad.items():
        resp = await app.get(f"/v1/audit?{query}", token=TECH_TOKEN)
        assert resp.status == 422, query
        problem = await resp.json()
        assert problem["type"] == PROBLEM + "invalid-request"
        assert [e["loc"] for e in problem["errors"]] == [field], query
    assert _audit_count(app) == before  # neither the refusals nor the reads wrote a row

    async def entries(query: str) -> list[int]:
        resp = await app.get(f"/v1/audit?{query}", token=TECH_TOKEN)
        assert resp.status == 200, query
        return [e["id"] for e in (await resp.json())["entries"]]

    at = row["at"]
    assert await entries(f"since={at.replace('Z', '%2B00:00')}") == [row["id"]]
    assert await entries("since=4102444800") == []  # 2100-01-01, unix seconds
    assert await entries("since=2000-01-01T00:00:00Z&actor=kiosk-1&action=release") == [row["id"]]
    assert await entries(f"target={held}") == [row["id"]]
    assert await entries("actor=tech-1") == []
    other = await _held(app, "query-key-0002")
    assert (await app.post(f"/v1/jobs/{other}/cancel")).status == 200
    newest, oldest = await entries("limit=1000")
    assert (newest, oldest) == (row["id"] + 1, row["id"])  # newest first
    assert await entries("limit=1") == [newest]


async def test_identify_on_a_real_printer_is_one_row(tmp_path: Path, printers: Rig) -> None:
    async with appliance(rig_config(tmp_path / "data", printers)) as (_run, kiosk):
        status, body = await kiosk.post("/v1/printers/printer-01/identify", tech=True)
        assert status == 200, body
        headers = {"Authorization": f"Bearer {TECH_TOKEN}"}
        async with kiosk.http.get(f"{kiosk.url}/v1/audit", headers=headers) as r:
            rows = (await r.json())["entries"]
        assert [(e["actor"], e["action"], e["target"], e["outcome"]) for e in rows] == [
            ("tech-1", "identify", "printer-01", "done")
        ]


async def test_the_audit_in_postgresql(tmp_path: Path, pg_url: str) -> None:
    """The same rows, through the same API, with the store in PostgreSQL."""
    cfg = config_dict(tmp_path / "data")
    cfg["store"] = {"url": pg_url}
    async with appliance(cfg) as (_run, kiosk):
        job = await kiosk.submit("pg-audit-0001", pool="lobby")
        status, _ = await kiosk.post(f"/v1/jobs/{job['id']}/release")
        assert status == 200
        status, _ = await kiosk.post(f"/v1/jobs/{job['id']}/release")
        assert status == 409
        headers = {"Authorization": f"Bearer {TECH_TOKEN}"}
        async with kiosk.http.get(f"{kiosk.url}/v1/audit?action=release", headers=headers) as r:
            rows = (await r.json())["entries"]
    assert [(e["actor"], e["source"], e["target"], e["outcome"]) for e in rows] == [
        ("kiosk-1", "127.0.0.1", job["id"], "conflict"),
        ("kiosk-1", "127.0.0.1", job["id"], "done"),
    ]


async def _rows(url: str) -> list[dict[str, Any]]:
    headers = {"Authorization": f"Bearer {TECH_TOKEN}"}
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"{url}/v1/audit?action=config-reload", headers=headers) as r,
    ):
        assert r.status == 200
        entries: list[dict[str, Any]] = (await r.json())["entries"]
        return entries


def test_a_sighup_reload_is_one_row_by_the_signal_with_the_changed_keys(tmp_path: Path) -> None:
    """A real process reloaded by SIGHUP: who is ``signal`` (system), what the changed keys;
    a refused reload (a key only a restart changes) is ``refused`` with that key."""
    with ReloadedAppliance(tmp_path, config_dict(tmp_path / "data")).running() as proc:
        cfg = copy.deepcopy(proc.cfg)
        cfg["retention"] = {"hold_ttl_s": 600}
        assert proc.reload(cfg)["event"] == "config_reloaded"
        rows = asyncio.run(_rows(proc.server.url))
        assert [
            (r["actor"], r["actor_kind"], r["source"], r["target_kind"], r["outcome"], r["detail"])
            for r in rows
        ] == [("signal", "system", None, "config", "done", "retention.hold_ttl_s")]
        cfg["server"] = {**cfg["server"], "port": cfg["server"].get("port", 0) + 1}
        assert proc.reload(cfg)["event"] == "reload_refused"
        newest = asyncio.run(_rows(proc.server.url))[0]
        assert (newest["outcome"], newest["detail"]) == ("refused", "restart keys: server.port")


async def test_the_cli_prints_the_trail_as_a_table(
    app: Appliance, capsys: pytest.CaptureFixture[str]
) -> None:
    held = await _held(app, "cli-audit-0001")
    assert (await app.post(f"/v1/jobs/{held}/release")).status == 200
    code, out, err = await run_cli(capsys, "audit", "--url", app.url, "--limit", "5")
    assert (code, err) == (0, "")
    header, row = out.splitlines()
    assert header.split() == ["AT", "WHO", "FROM", "ACTION", "TARGET", "OUTCOME", "DETAIL"]
    assert "kiosk-1 (token)" in row
    assert f"job {held}" in row
    assert row.split()[-1] == "done"
    code, out, err = await run_cli(capsys, "audit", "--url", app.url, "--since", "yesterday")
    assert code == 1
    assert "query.since" in err
    code, _, err = await run_cli(capsys, "audit", "--url", app.url, "--limit", "1001")
    assert code == 2
    assert "1 to 1000" in err


async def test_the_housekeeping_sweeps_rows_past_the_retention(
    make_appliance: Callable[..., Any],
) -> None:
    async with make_appliance(sections={"retention": {"audit_s": 3600}}) as app:
        service = app.running.service
        now = service.clock()
        for at, target in ((now - 7200, "old"), (now - 60, "recent")):
            await service.audit.log.record(
                AuditEntry(at, "tech-1", "token", "127.0.0.1", "pause", "printer", target, "done")
            )
        await service.upkeep.housekeeping()
        assert [e.target for e in await service.audit.since(None, limit=10)] == ["recent"]


def test_every_audited_operation_is_a_route_that_acts() -> None:
    """The audit table names real routes (a renamed operationId would silently stop its rows),
    and every one of them changes something (POST, PUT or DELETE)."""
    methods = {r.operation_id: r.method for r in ROUTES}
    assert {op: methods.get(op) for op in AUDITED} == {
        op: methods[op] for op in AUDITED if methods.get(op) in ("post", "put", "delete")
    }
