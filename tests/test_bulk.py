"""Many jobs at once over real HTTP on a real SQLite file: POST /v1/jobs/{release,cancel,
replay,resolve} with ids or a filter. Bad input is refused whole (exact status, problem
type, nothing stored changed); a good call answers one outcome per job. On real printers:
tests/test_bulk_printers.py."""

from __future__ import annotations

import asyncio
import collections
from typing import Any

import pytest

from tests.conftest import KIOSK_TOKEN, TECH_TOKEN, Appliance
from tests.test_resolve import dead_job

PROBLEM = "urn:edgeprint:problem:"


async def held(app: Appliance, n: int, prefix: str, **meta: Any) -> list[str]:
    """``n`` HELD jobs (owner ann, pool lobby unless ``meta`` says otherwise), oldest first."""
    out = []
    for i in range(n):
        body = {"owner": "ann", "pool": "lobby", **meta}
        resp = await app.submit(body, key=f"{prefix}-{i:04d}")
        assert resp.status == 201
        out.append((await resp.json())["id"])
    return out


async def bulk(
    app: Appliance, verb: str, body: Any, token: str = KIOSK_TOKEN
) -> tuple[int, dict[str, Any]]:
    resp = await app.post(f"/v1/jobs/{verb}", body, token=token)
    return resp.status, await resp.json()


# --- bad input: refused whole, nothing changed ----------------------------------------------

BAD_BODIES: list[tuple[str, Any, str]] = [
    ("no limit", {"filter": {"owner": "ann"}}, "body.limit"),
    ("limit over the maximum", {"filter": {"owner": "ann"}, "limit": 501}, "body.limit"),
    ("limit zero", {"filter": {"owner": "ann"}, "limit": 0}, "body.limit"),
    ("limit as a string", {"filter": {"owner": "ann"}, "limit": "5"}, "body.limit"),
    ("both ids and filter", {"ids": ["0" * 32], "filter": {}, "limit": 5}, "body"),
    ("neither ids nor filter", {"limit": 5}, "body"),
    ("unknown filter key", {"filter": {"colour": "red"}, "limit": 5}, "body.filter.colour"),
    ("unknown top-level key", {"filter": {}, "limit": 5, "force": True}, "body.force"),
    ("bad state name", {"filter": {"state": "PAUSED"}, "limit": 5}, "body.filter.state"),
    ("a state release does not apply to", {"filter": {"state": "DONE"}, "limit": 5},
     "body.filter.state"),
    ("dead_reason for release", {"filter": {"dead_reason": "poison"}, "limit": 5},
     "body.filter.dead_reason"),
    ("ids not 32 hex", {"ids": ["ABC"], "limit": 5}, "body.ids.0"),
    ("more ids than limit", {"ids": ["0" * 32, "1" * 32], "limit": 1}, "body"),
    ("empty ids", {"ids": [], "limit": 1}, "body.ids"),
    ("a time without offset", {"filter": {"created_before": "2026-01-01T00:00:00"}, "limit": 5},
     "body.filter.created_before"),
    ("printer and pool", {"filter": {}, "limit": 5, "printer": "printer-01", "pool": "lobby"},
     "body"),
]  # fmt: skip


@pytest.mark.parametrize(("why", "body", "loc"), BAD_BODIES, ids=[b[0] for b in BAD_BODIES])
async def test_bad_bodies_are_refused_whole(app: Appliance, why: str, body: Any, loc: str) -> None:
    """Each bad body: 422 invalid-request naming the field; no job moved, no event written."""
    await held(app, 2, "bad-body")
    before = app.snapshot()
    status, problem = await bulk(app, "release", body)
    assert status == 422, problem
    assert problem["type"] == PROBLEM + "invalid-request"
    assert loc in [e["loc"] for e in problem["errors"]], problem
    assert app.snapshot() == before


async def test_other_bad_requests_and_targets(app: Appliance) -> None:
    """Not JSON → 400 malformed-json; not a JSON object → 422; text/plain → 415; an empty
    body → 422 (limit missing); an unknown release target → 422 unknown-target; a resolve
    without `printed` → 422. Nothing changes."""
    await held(app, 2, "other-bad")
    before = app.snapshot()
    url = f"{app.url}/v1/jobs/release"
    headers = app.headers()
    async with app.http.post(
        url, data=b"{nope", headers={**headers, "Content-Type": "application/json"}
    ) as r:
        assert (r.status, (await r.json())["type"]) == (400, PROBLEM + "malformed-json")
    async with app.http.post(
        url, data=b"[1]", headers={**headers, "Content-Type": "application/json"}
    ) as r:
        assert (r.status, (await r.json())["type"]) == (422, PROBLEM + "invalid-request")
    async with app.http.post(
        url, data=b'{"limit": 1, "filter": {}}', headers={**headers, "Content-Type": "text/plain"}
    ) as r:
        assert (r.status, (await r.json())["type"]) == (415, PROBLEM + "unsupported-media-type")
    async with app.http.post(url, headers=headers) as r:
        body = await r.json()
        assert (r.status, body["type"]) == (422, PROBLEM + "invalid-request")
        assert [e["loc"] for e in body["errors"]] == ["body"]  # required, with an example
        assert '"limit": 1' in body["detail"]
    status, problem = await bulk(app, "release", {"filter": {}, "limit": 5, "printer": "nope-9"})
    assert (status, problem["type"]) == (422, PROBLEM + "unknown-target")
    status, problem = await bulk(app, "resolve", {"filter": {}, "limit": 5}, token=TECH_TOKEN)
    assert (status, problem["type"]) == (422, PROBLEM + "invalid-request")
    assert [e["loc"] for e in problem["errors"]] == ["body.printed"]
    status, problem = await bulk(
        app, "resolve", {"filter": {"dead_reason": "poison"}, "limit": 5, "printed": True},
        token=TECH_TOKEN,
    )  # fmt: skip
    assert (status, problem["type"]) == (422, PROBLEM + "invalid-request")
    assert app.snapshot() == before


EMPTY_FILTER = (
    "a filter needs at least one of owner, pool, printer, state, dead_reason, "
    "created_after, created_before"
)


async def test_an_empty_filter_is_refused_not_every_job(app: Appliance) -> None:
    """{} would be every job of every owner: 422 invalid-request saying what a filter needs,
    for each verb and for a dry run; nothing changes."""
    await held(app, 2, "empty-filter")
    await held(app, 1, "empty-filter-bob", owner="bob")
    await dead_job(app, "empty-filter-dead", reason="poison")
    before = app.snapshot()
    for verb, extra, token in (
        ("release", {}, KIOSK_TOKEN),
        ("cancel", {}, KIOSK_TOKEN),
        ("cancel", {"dry_run": True}, KIOSK_TOKEN),
        ("replay", {}, TECH_TOKEN),
        ("resolve", {"printed": True}, TECH_TOKEN),
    ):
        status, problem = await bulk(app, verb, {"filter": {}, "limit": 500, **extra}, token)
        assert (status, problem["type"]) == (422, PROBLEM + "invalid-request"), verb
        assert problem["detail"] == EMPTY_FILTER
        assert [e["loc"] for e in problem["errors"]] == ["body.filter"]
    assert app.snapshot() == before


async def test_a_filter_naming_an_unknown_pool_or_printer_is_refused(app: Appliance) -> None:
    """A typo ("lobyy") would match nothing and answer 200 as if done: 422 unknown-target,
    as the single calls answer; nothing changes."""
    await held(app, 2, "typo")
    before = app.snapshot()
    for verb, where, token in (
        ("cancel", {"pool": "lobyy"}, KIOSK_TOKEN),
        ("cancel", {"printer": "printer-99", "owner": "ann"}, KIOSK_TOKEN),
        ("release", {"pool": "lobyy"}, KIOSK_TOKEN),
        ("replay", {"printer": "printer-99"}, TECH_TOKEN),
    ):
        for dry in (False, True):
            body = {"filter": where, "limit": 5, "dry_run": dry}
            status, problem = await bulk(app, verb, body, token)
            assert (status, problem["type"]) == (422, PROBLEM + "unknown-target"), (verb, where)
            loc = "body.filter.pool" if "pool" in where else "body.filter.printer"
            assert [e["loc"] for e in problem["errors"]] == [loc]
    assert app.snapshot() == before


WHEN_ACCEPTED = (
    "expected a date (2030-01-01, midnight UTC) or an RFC 3339 date-time with an offset "
    "(2030-01-01T08:30:00+02:00 or 2030-01-01T06:30:00Z)"
)


@pytest.mark.parametrize(
    "when",
    ["2030-01-01T00:00:00", 1893456000, 1893456000.5, "01/01/2030", "2030-02-30", "", True],
    ids=["naive", "seconds", "float", "us-date", "no-such-day", "empty", "bool"],
)
async def test_created_times_refused_say_what_is_accepted(app: Appliance, when: Any) -> None:
    await held(app, 1, "when-bad")
    before = app.snapshot()
    for key in ("created_before", "created_after"):
        status, problem = await bulk(app, "cancel", {"filter": {key: when}, "limit": 5})
        assert (status, problem["type"]) == (422, PROBLEM + "invalid-request")
        assert [(e["loc"], e["message"]) for e in problem["errors"]] == [
            (f"body.filter.{key}", WHEN_ACCEPTED)
        ]
    assert app.snapshot() == before


async def test_created_times_take_a_date_or_a_datetime_with_offset(app: Appliance) -> None:
    """A date is its midnight UTC; a date-time carries its offset (Z or ±hh:mm)."""
    ids = await held(app, 2, "when-good")
    before = app.snapshot()
    for after in ("2030-01-01", "2030-01-01T02:00:00+02:00", "2029-12-31t23:00:00z"):
        status, answer = await bulk(app, "cancel", {"filter": {"created_after": after}, "limit": 5})
        assert (status, answer["results"]) == (200, []), after
    assert app.snapshot() == before
    status, answer = await bulk(
        app, "cancel", {"filter": {"created_before": "2030-01-01", "owner": "ann"}, "limit": 5}
    )
    assert status == 200
    assert [(r["id"], r["outcome"]) for r in answer["results"]] == [(i, "cancelled") for i in ids]


async def test_roles(app: Appliance) -> None:
    """Replay and resolve are a technician's, as their single calls: a kiosk gets 403, no
    token 401; nothing changes."""
    await dead_job(app, "roles-dead-0001", reason="poison")
    before = app.snapshot()
    status, problem = await bulk(app, "replay", {"filter": {}, "limit": 5})
    assert (status, problem["type"]) == (403, PROBLEM + "forbidden")
    body = {"filter": {}, "limit": 5, "printed": True}
    status, problem = await bulk(app, "resolve", body)
    assert (status, problem["type"]) == (403, PROBLEM + "forbidden")
    async with app.http.post(f"{app.url}/v1/jobs/cancel", json={"filter": {}, "limit": 1}) as r:
        assert r.status == 401
    assert app.snapshot() == before


async def test_a_filter_matching_nothing_is_200_and_empty(app: Appliance) -> None:
    """No such owner, a window with no jobs, no DEAD jobs: 200, matched 0, nothing changed."""
    await held(app, 3, "nothing")
    before = app.snapshot()
    for verb, body, token in (
        ("release", {"filter": {"owner": "nobody"}, "limit": 10}, KIOSK_TOKEN),
        (
            "cancel",
            {"filter": {"created_before": "2000-01-01T00:00:00Z"}, "limit": 10},
            KIOSK_TOKEN,
        ),
        ("replay", {"filter": {"dead_reason": "attempts_exhausted"}, "limit": 10}, TECH_TOKEN),
        ("resolve", {"filter": {"state": "DEAD"}, "limit": 10, "printed": False}, TECH_TOKEN),
    ):
        status, answer = await bulk(app, verb, body, token=token)
        assert (status, answer) == (200, {"matched": 0, "more": False, "results": []}), verb
    assert app.snapshot() == before


# --- what a good call does ---------------------------------------------------------------


async def test_release_by_filter_takes_the_oldest_up_to_limit(app: Appliance) -> None:
    """Five of ann's HELD jobs and two of bob's: a filter on ann with limit 3 releases her
    three oldest (more: true), leaves the rest HELD; the events name the kiosk's token."""
    ann = await held(app, 5, "oldest-ann")
    bob = await held(app, 2, "oldest-bob", owner="bob")
    status, answer = await bulk(
        app, "release", {"filter": {"owner": "ann", "state": "HELD"}, "limit": 3}
    )
    assert status == 200
    assert (answer["matched"], answer["more"]) == (3, True)
    assert answer["results"] == [
        {"id": i, "outcome": "released", "state": "RELEASED", "detail": None} for i in ann[:3]
    ]
    service = app.running.service
    states = {i: (await service.get(i)).state.value for i in ann + bob}
    assert states == {**dict.fromkeys(ann[:3], "RELEASED"), **dict.fromkeys(ann[3:] + bob, "HELD")}
    events = await service.jobs.events(ann[0])
    assert (events[-1].to_state, events[-1].actor) == ("RELEASED", "kiosk-1")


async def test_release_by_ids_says_why_not_for_each(app: Appliance) -> None:
    """Ids of a HELD job, a RELEASED one, a PIN job, a job of no one, one id twice: released,
    conflict (RELEASED), pin-required (HELD, no attempt counted), not-found; each once."""
    [a, b] = await held(app, 2, "why-not")
    [pinned] = await held(app, 1, "why-not-pin", release_pin="4321")
    assert (await app.post(f"/v1/jobs/{b}/release")).status == 200
    ghost = "0" * 32
    status, answer = await bulk(app, "release", {"ids": [a, b, pinned, ghost, a], "limit": 5})
    assert status == 200
    got = [(r["id"], r["outcome"], r["state"]) for r in answer["results"]]
    assert got == [
        (a, "released", "RELEASED"),
        (b, "conflict", "RELEASED"),
        (pinned, "pin-required", "HELD"),
        (ghost, "not-found", None),
    ]
    assert answer["matched"] == 4
    # what to do, not the single call's 'send {"pin": …}' (a bulk body takes no PIN)
    assert answer["results"][2]["detail"] == "has a release PIN: release it alone with its PIN"
    job = await app.running.service.get(pinned)
    assert (job.state.value, job.pin_failures) == ("HELD", 0)


async def test_release_to_another_printer(app: Appliance) -> None:
    """A release body's `printer` retargets every selected job (the filter's `pool` selects)."""
    ids = await held(app, 2, "retarget")
    body = {"filter": {"pool": "lobby"}, "limit": 10, "printer": "printer-03"}
    status, answer = await bulk(app, "release", body)
    assert status == 200
    assert [r["outcome"] for r in answer["results"]] == ["released", "released"]
    for i in ids:
        job = await app.running.service.get(i)
        assert (job.state.value, job.printer, job.pool) == ("RELEASED", "printer-03", None)


async def test_replay_and_resolve_by_dead_reason(app: Appliance) -> None:
    """Replay by dead_reason takes only those dead letters; resolve takes only the
    outcome_unknown ones (whatever else is DEAD)."""
    exhausted = [
        (await dead_job(app, f"dr-x-{i:04d}", "attempts_exhausted"))["id"] for i in range(3)
    ]
    poison = (await dead_job(app, "dr-p-0001", "poison"))["id"]
    unknown = [(await dead_job(app, f"dr-u-{i:04d}"))["id"] for i in range(2)]
    status, answer = await bulk(
        app, "replay", {"filter": {"dead_reason": "attempts_exhausted"}, "limit": 50},
        token=TECH_TOKEN,
    )  # fmt: skip
    assert status == 200
    assert [(r["id"], r["outcome"]) for r in answer["results"]] == [
        (i, "replayed") for i in exhausted
    ]
    status, answer = await bulk(
        app, "resolve", {"filter": {"state": "DEAD"}, "limit": 50, "printed": True},
        token=TECH_TOKEN,
    )  # fmt: skip
    assert status == 200
    assert [(r["id"], r["outcome"], r["state"]) for r in answer["results"]] == [
        (i, "resolved", "DONE") for i in unknown
    ]
    assert (await app.running.service.get(poison)).state.value == "DEAD"
    events = await app.running.service.jobs.events(unknown[0])
    assert (events[-1].to_state, events[-1].actor) == ("DONE", "tech-1")


async def test_cancel_by_filter_with_a_created_window(app: Appliance) -> None:
    """created_after/created_before (RFC 3339) bound the selection; a kiosk's bulk cancel
    leaves a PIN job alone (pin-required), as its single cancel would without the PIN."""
    service = app.running.service
    early = await held(app, 2, "window-early")
    cut = (await service.get(early[-1])).created_at
    late = await held(app, 2, "window-late", owner="bob")
    [pinned] = await held(app, 1, "window-pin", owner="bob", release_pin="9876")
    from datetime import UTC, datetime

    after = datetime.fromtimestamp(cut, UTC).isoformat().replace("+00:00", "Z")
    status, answer = await bulk(
        app, "cancel", {"filter": {"created_after": after, "owner": "bob"}, "limit": 10}
    )
    assert status == 200
    outcomes = {r["id"]: r["outcome"] for r in answer["results"]}
    assert outcomes == {**dict.fromkeys(late, "cancelled"), pinned: "pin-required"}
    details = {r["id"]: r["detail"] for r in answer["results"]}
    assert details[pinned] == "has a release PIN: cancel it alone with its PIN"
    assert {(await service.get(i)).state.value for i in early} == {"HELD"}
    # a technician's token needs no PIN
    status, answer = await bulk(app, "cancel", {"ids": [pinned], "limit": 1}, token=TECH_TOKEN)
    assert [r["outcome"] for r in answer["results"]] == ["cancelled"]


async def test_concurrent_bulk_and_single_releases_release_each_job_once(app: Appliance) -> None:
    """40 HELD jobs; at once: a bulk release by filter, one by ids, another by ids in reverse
    order, and 40 single releases. Across every answer each job is `released` exactly once,
    and its history has one RELEASED."""
    ids = await held(app, 40, "race-rel")
    calls = [
        app.post("/v1/jobs/release", {"filter": {"owner": "ann"}, "limit": 40}),
        app.post("/v1/jobs/release", {"ids": ids, "limit": 40}),
        app.post("/v1/jobs/release", {"ids": ids[::-1], "limit": 40}),
        *(app.post(f"/v1/jobs/{i}/release") for i in ids),
    ]
    responses = await asyncio.gather(*calls)
    wins: collections.Counter[str] = collections.Counter()
    for resp in responses[:3]:
        assert resp.status == 200
        for r in (await resp.json())["results"]:
            assert r["outcome"] in ("released", "conflict"), r
            if r["outcome"] == "released":
                wins[r["id"]] += 1
            else:
                assert r["state"] == "RELEASED"
    for i, resp in zip(ids, responses[3:], strict=True):
        assert resp.status in (200, 409)
        if resp.status == 200:
            wins[i] += 1
    assert wins == dict.fromkeys(ids, 1)
    for i in ids:
        events = await app.running.service.jobs.events(i)
        assert [e.to_state for e in events] == ["HELD", "RELEASED"]


async def test_a_dry_run_acts_on_nothing(app: Appliance) -> None:
    """`dry_run`: the jobs the call would take (`selected`), the ones it could not, and
    nothing stored changes."""
    ids = await held(app, 3, "dry")
    assert (await app.post(f"/v1/jobs/{ids[2]}/cancel")).status == 200
    before = app.snapshot()
    status, answer = await bulk(
        app, "release", {"ids": [*ids, "0" * 32], "limit": 4, "dry_run": True}
    )
    assert status == 200
    assert [(r["outcome"], r["state"]) for r in answer["results"]] == [
        ("selected", "HELD"), ("selected", "HELD"), ("conflict", "CANCELLED"), ("not-found", None),
    ]  # fmt: skip
    status, answer = await bulk(
        app, "release", {"filter": {"owner": "ann"}, "limit": 1, "dry_run": True}
    )
    assert (status, answer["matched"], answer["more"]) == (200, 1, True)
    assert app.snapshot() == before
