"""The v1 job API over real HTTP on loopback, backed by a real SQLite file."""

from __future__ import annotations

import hypothesis
import hypothesis.strategies

from testbed.pdfs import make_pdf
from tests.conftest import TECH_TOKEN, Appliance


async def test_submit_held_job_then_get_it(app: Appliance) -> None:
    """A new job is 201 with Location, HELD by default, and readable by id."""
    resp = await app.submit({"owner": "ann", "printer": "printer-03"})
    assert resp.status == 201
    job = await resp.json()
    assert resp.headers["Location"] == f"/v1/jobs/{job['id']}"
    assert job["state"] == "HELD"
    assert job["printer"] == "printer-03"
    assert job["pool"] is None
    assert (job["priority"], job["copies"], job["attempts"]) == (100, 1, 0)
    assert job["document"]["bytes"] == len(make_pdf())
    got = await app.get(f"/v1/jobs/{job['id']}")
    assert got.status == 200
    assert await got.json() == job


async def test_same_key_same_payload_replays_the_job(app: Appliance) -> None:
    """A retry with the same key and payload returns the same job with Idempotent-Replayed."""
    first = await app.submit(key="retry-key-1")
    second = await app.submit(key="retry-key-1")
    assert first.status == 201
    assert second.status == 200
    assert second.headers["Idempotent-Replayed"] == "true"
    assert (await second.json())["id"] == (await first.json())["id"]
    assert len(app.snapshot()["jobs"]) == 1


async def test_same_key_other_payload_is_422(app: Appliance) -> None:
    """The same key with a different document is refused and stores nothing new."""
    first = await app.submit(key="retry-key-2")
    before = app.snapshot()
    other = await app.submit(key="retry-key-2", document=make_pdf("someone else"))
    assert other.status == 422
    body = await other.json()
    assert body["type"] == "urn:edgeprint:problem:idempotency-key-reused"
    assert body["job_id"] == (await first.json())["id"]
    assert app.snapshot()["jobs"] == before["jobs"]


async def test_hold_false_is_stored_released(app: Appliance) -> None:
    """A badge kiosk job (hold=false) is printable at once."""
    resp = await app.submit({"owner": "bob", "pool": "lobby", "hold": False, "priority": 5})
    assert resp.status == 201
    job = await resp.json()
    assert job["state"] == "RELEASED"
    assert job["released_at"] is not None


async def test_release_then_release_again_is_409(app: Appliance) -> None:
    """Release moves HELD → RELEASED once; a second release is 409 with the current state."""
    job = await (await app.submit()).json()
    first = await app.post(f"/v1/jobs/{job['id']}/release")
    assert first.status == 200
    assert (await first.json())["state"] == "RELEASED"
    again = await app.post(f"/v1/jobs/{job['id']}/release")
    assert again.status == 409
    body = await again.json()
    assert body["state"] == "RELEASED"
    assert body["type"] == "urn:edgeprint:problem:state-conflict"


async def test_release_can_retarget(app: Appliance) -> None:
    """A release body names the printer (or pool) to print on, replacing the stored one."""
    job = await (await app.submit({"owner": "ann"})).json()
    assert (job["printer"], job["pool"]) == (None, None)
    resp = await app.post(f"/v1/jobs/{job['id']}/release", {"printer": "printer-02"})
    assert resp.status == 200
    out = await resp.json()
    assert (out["printer"], out["pool"], out["state"]) == ("printer-02", None, "RELEASED")


async def test_a_release_target_replaces_the_submitted_one(app: Appliance) -> None:
    """A job targets one printer or one pool: a release naming a printer replaces the job's
    pool (any configured printer, in that pool or not), one naming a pool its printer."""
    pooled = await (await app.submit({"owner": "ann", "pool": "lobby"})).json()
    resp = await app.post(f"/v1/jobs/{pooled['id']}/release", {"printer": "printer-03"})
    out = await resp.json()
    assert (resp.status, out["printer"], out["pool"]) == (200, "printer-03", None)
    aimed = await (
        await app.submit({"owner": "ann", "printer": "printer-03"}, key="key-00000002")
    ).json()
    resp = await app.post(f"/v1/jobs/{aimed['id']}/release", {"pool": "lobby"})
    out = await resp.json()
    assert (resp.status, out["printer"], out["pool"]) == (200, None, "lobby")


async def test_release_without_any_target_is_422_and_keeps_job_held(app: Appliance) -> None:
    """A held job with no printer or pool cannot be released without naming one."""
    job = await (await app.submit({"owner": "ann"})).json()
    resp = await app.post(f"/v1/jobs/{job['id']}/release")
    assert resp.status == 422
    assert (await resp.json())["type"] == "urn:edgeprint:problem:missing-target"
    assert (await (await app.get(f"/v1/jobs/{job['id']}")).json())["state"] == "HELD"


async def test_cancel_then_cancel_again_is_409(app: Appliance) -> None:
    """Cancel works once; cancelling a terminal job is 409 with its state."""
    job = await (await app.submit()).json()
    first = await app.post(f"/v1/jobs/{job['id']}/cancel")
    assert first.status == 200
    assert (await first.json())["state"] == "CANCELLED"
    again = await app.post(f"/v1/jobs/{job['id']}/cancel")
    assert again.status == 409
    assert (await again.json())["state"] == "CANCELLED"


async def test_every_transition_writes_one_event(app: Appliance) -> None:
    """job_events holds submit, release and cancel, in order, with who did it."""
    job = await (await app.submit()).json()
    await app.post(f"/v1/jobs/{job['id']}/release")
    await app.post(f"/v1/jobs/{job['id']}/cancel")
    events = await app.running.service.jobs.events(job["id"])
    assert [(e.from_state, e.to_state) for e in events] == [
        (None, "HELD"),
        ("HELD", "RELEASED"),
        ("RELEASED", "CANCELLED"),
    ]
    assert {e.actor for e in events} == {"kiosk-1"}


async def test_list_filters_and_pages(app: Appliance) -> None:
    """GET /v1/jobs filters by state and owner and pages newest first with a cursor."""
    ids = []
    for i in range(5):
        ids.append(
            (await (await app.submit({"owner": f"o{i % 2}"}, key=f"list-key-{i}")).json())["id"]
        )
    await app.post(f"/v1/jobs/{ids[0]}/cancel")
    page1 = await (await app.get("/v1/jobs?limit=2")).json()
    assert [j["id"] for j in page1["jobs"]] == [ids[4], ids[3]]
    page2 = await (await app.get(f"/v1/jobs?limit=2&cursor={page1['next_cursor']}")).json()
    assert [j["id"] for j in page2["jobs"]] == [ids[2], ids[1]]
    held_o0 = await (await app.get("/v1/jobs?state=HELD&owner=o0")).json()
    assert [j["id"] for j in held_o0["jobs"]] == [ids[4], ids[2]]
    assert held_o0["next_cursor"] is None


async def test_replay_needs_tech_and_a_dead_job(app: Appliance) -> None:
    """Replay is for technicians; on a job that is not DEAD it is 409."""
    job = await (await app.submit()).json()
    as_kiosk = await app.post(f"/v1/jobs/{job['id']}/replay")
    assert as_kiosk.status == 403
    as_tech = await app.post(f"/v1/jobs/{job['id']}/replay", token=TECH_TOKEN)
    assert as_tech.status == 409
    assert (await as_tech.json())["state"] == "HELD"


async def test_health_ready_and_metrics_need_no_token(app: Appliance) -> None:
    """/healthz, /readyz and /metrics answer without a token; metrics count jobs by state."""
    await app.submit()
    for path in ("/healthz", "/readyz"):
        resp = await app.http.get(app.url + path)
        assert resp.status == 200
        assert (await resp.json())["status"] == "ok"
    resp = await app.http.get(app.url + "/metrics")
    text = await resp.text()
    assert resp.headers["Content-Type"].startswith("text/plain")
    assert 'edgeprint_jobs{state="HELD"} 1.0' in text
    assert "edgeprint_jobs_accepted_total" in text


async def test_correlation_id_is_echoed(app: Appliance) -> None:
    """A valid X-Correlation-ID comes back; without one the appliance makes one."""
    resp = await app.http.get(app.url + "/healthz", headers={"X-Correlation-ID": "kiosk-7-abc"})
    assert resp.headers["X-Correlation-ID"] == "kiosk-7-abc"
    first = (await app.http.get(app.url + "/healthz")).headers["X-Correlation-ID"]
    second = (await app.http.get(app.url + "/healthz")).headers["X-Correlation-ID"]
    assert first != second
    assert len(first) >= 16


@hypothesis.settings(max_examples=300, deadline=None)
@hypothesis.given(
    text=hypothesis.strategies.text(max_size=12),
    maybe=hypothesis.strategies.none() | hypothesis.strategies.text(max_size=8),
    ts=hypothesis.strategies.floats(min_value=0, max_value=4e9),
    n=hypothesis.strategies.integers(min_value=0, max_value=10**9),
    flag=hypothesis.strategies.booleans(),
)
def test_job_json_is_the_models_json(
    text: str, maybe: str | None, ts: float, n: int, flag: bool
) -> None:
    """The hot-path job JSON is byte for byte what the JobOut model serialises."""
    from edgeprint.models import JobOut, job_json
    from edgeprint.records import JobRecord
    from edgeprint.states import JobState

    values: dict[str, object] = dict.fromkeys(JobRecord._fields)
    values.update(
        seq=n, id="a" * 32, idempotency_key=text, request_sha256="0" * 64,
        state=JobState.PRINTING if flag else JobState.HELD, owner=text, printer=maybe,
        pool=None if maybe else text, priority=n % 1001, copies=n % 99 + 1,
        document_sha256="f" * 64, document_bytes=n, attempts=n % 7, not_before=0.0,
        printed_on=maybe, last_error=maybe, dead_reason=maybe, created_at=ts,
        updated_at=ts + 0.0005, released_at=ts if flag else None, claimed_at=None,
        finished_at=None if flag else ts, token_name="kiosk", actor="kiosk",
        release_pin_hash=maybe, pin_failures=0, document_pages=None if flag else n % 500,
        claims=n % 3, cancel_requested=flag, truncated_copies=n % 2,
        document_format="application/vnd.zebra-zpl" if flag else "application/pdf",
        title=maybe, created_run=ts, finished_run=None if flag else ts, released_run=ts,
    )  # fmt: skip
    job = JobRecord(**values)  # type: ignore[arg-type]
    assert job_json(job) == JobOut.from_record(job).model_dump_json().encode()
