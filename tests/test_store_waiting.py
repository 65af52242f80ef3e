"""Released jobs waiting for stock, on both store backends: the claim's stock condition, the
waiting reason's marks, and the ``job.waiting`` outbox rows."""

from __future__ import annotations

from edgeprint.states import JobState
from edgeprint.stock import PageSizes, StockView, stock
from edgeprint.store.interface import Store
from edgeprint.store.job_rows import NewJob
from edgeprint.store.jobs import Jobs
from edgeprint.store.outbox import Outbox
from edgeprint.store.stock_sql import stock_condition
from edgeprint.store.waiting import Waiting

IN = 2540
BADGE = PageSizes(3 * IN, 3 * IN, 4 * IN, 4 * IN)
LETTER = PageSizes(21590, 21590, 27940, 27940)


def _new(i: int, sizes: PageSizes | None, **kw: object) -> NewJob:
    fields: dict[str, object] = {
        "id": f"{i:032x}", "idempotency_key": f"key-{i:04d}", "request_sha256": "r",
        "state": JobState.RELEASED, "owner": "ann", "printer": None, "pool": "lobby",
        "priority": 100, "copies": 1, "document_sha256": "d", "document_bytes": 10,
        "token_name": "kiosk-1", "correlation_id": None, **NewJob.edges(sizes), **kw,
    }  # fmt: skip
    return NewJob(**fields)  # type: ignore[arg-type]


async def test_a_printer_claims_only_what_its_stock_fits(store: Store) -> None:
    """Label stock of 4×6 in takes neither the badge nor the letter page; the job of unknown
    size it takes; with 4×3 in labels it takes the badge, never the letter page."""
    jobs = Jobs(store)
    for i, sizes in enumerate([BADGE, LETTER, None]):
        assert await jobs.insert(_new(i, sizes), now=float(i), actor="k") is not None
    wrong = stock_condition(StockView((stock(4 * IN, 6 * IN, media_type="labels"),)), [], 200)
    first = await jobs.claim_next("printer-01", "lobby", now=10.0, actor="p", fit=wrong)
    assert first is not None
    assert first.page_sizes is None
    assert await jobs.claim_next("printer-01", "lobby", now=10.0, actor="p", fit=wrong) is None
    right = stock_condition(StockView((stock(4 * IN, 3 * IN, media_type="labels"),)), [], 200)
    badge = await jobs.claim_next("printer-01", "lobby", now=11.0, actor="p", fit=right)
    assert badge is not None
    assert badge.page_sizes == BADGE
    assert await jobs.claim_next("printer-01", "lobby", now=12.0, actor="p", fit=right) is None
    [left] = await jobs.list_jobs(state=JobState.RELEASED)
    assert left.page_sizes == LETTER


async def test_marks_begin_once_change_in_place_and_clear(store: Store) -> None:
    jobs, waiting, outbox = Jobs(store), Waiting(store), Outbox(store)
    await outbox.subscribe(["job.waiting"])
    for i in range(3):
        assert await jobs.insert(_new(i, BADGE), now=1.0, actor="k") is not None
    assert await jobs.insert(_new(9, LETTER), now=1.0, actor="k") is not None
    [badges, _letters] = sorted(await waiting.groups(), key=lambda g: g.sizes.short_max)
    assert (badges.jobs, badges.reason) == (3, None)
    began = await waiting.mark(None, "lobby", BADGE, "no 3×4 in", now=2.0)
    assert len(began) == 3
    for job_id in began:
        assert await waiting.webhook(f"msg_{job_id}", job_id, None, 2.0, "{}")
    # the same reason again: nobody begins to wait; another reason: replaced, no new start
    assert await waiting.mark(None, "lobby", BADGE, "no 3×4 in", now=3.0) == []
    assert await waiting.mark(None, "lobby", BADGE, "still no 3×4 in", now=4.0) == []
    assert {j.waiting_reason for j in await jobs.list_jobs(state=JobState.RELEASED)} == {
        "still no 3×4 in", None,
    }  # fmt: skip
    # a claim clears it (the job leaves RELEASED); the others clear when stock is seen
    claimed = await jobs.claim_next("printer-01", "lobby", now=5.0, actor="p")
    assert claimed is not None
    assert (claimed.state, claimed.waiting_reason) == (JobState.PRINTING, None)
    left = [j for j in await jobs.list_jobs(state=JobState.RELEASED) if j.waiting_reason]
    assert len(left) == 2
    assert await waiting.mark(None, "lobby", BADGE, None, now=6.0) == []
    assert {j.waiting_reason for j in await jobs.list_jobs()} == {None}
    rows = await outbox.after(0, ["job.waiting"])
    assert sorted(r.job_id or "" for r in rows) == sorted(began)
    assert {r.type for r in rows} == {"job.waiting"}


async def test_no_outbox_row_when_nobody_subscribed(store: Store) -> None:
    waiting = Waiting(store)
    assert not await waiting.webhook("msg_1", "j", None, 1.0, "{}")
    assert await Outbox(store).after(0, ["job.waiting"]) == []
