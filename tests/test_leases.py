"""Printer leases on both backends: the epoch fences a stale owner's writes, the heartbeat
spreads printers over live appliances, an owner stops before a taker starts (DESIGN §10)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from edgeprint import errors
from edgeprint.config import ClusterConfig, parse_config
from edgeprint.copies import CopyState
from edgeprint.dispatch.leases import LeaseKeeper
from edgeprint.metrics import Metrics
from edgeprint.models import SubmitMetadata
from edgeprint.printers.ipp import PrinterJobRef
from edgeprint.records import JobRecord
from edgeprint.service import Caller, JobService
from edgeprint.spool import Spool
from edgeprint.states import JobState
from edgeprint.store.interface import Store
from edgeprint.store.jobs import Jobs
from edgeprint.store.leases import Fence, Leases
from testbed.pdfs import make_pdf
from tests.conftest import config_dict

KIOSK = Caller("kiosk-1", "kiosk", "corr-kiosk")
PRINTERS = ["printer-01", "printer-02", "printer-03"]
CLUSTER = ClusterConfig(appliance_id="x", lease_s=3.0, heartbeat_s=1.0, margin_s=0.5)


class Clock:
    """A monotonic clock the test moves (time is a parameter)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@contextlib.asynccontextmanager
async def _appliance(
    tmp_path: Path, store: Store, name: str
) -> AsyncIterator[tuple[JobService, LeaseKeeper, Clock]]:
    """One appliance's service and lease keeper on the shared ``store``."""
    config = parse_config(config_dict(tmp_path / name))
    config.server.data_dir.mkdir(parents=True)
    spool = Spool(config.server.data_dir)
    spool.prepare()
    fence = Fence(name)
    metrics = Metrics()
    clock = Clock()
    keeper = LeaseKeeper(
        Leases(store), fence, PRINTERS, CLUSTER, metrics, monotonic=clock, wall=clock
    )
    yield JobService(config, Jobs(store, fence=fence), spool, metrics), keeper, clock


async def _released(service: JobService, key: str) -> None:
    staged = service.spool.stage()
    staged.write(make_pdf())
    meta = SubmitMetadata(owner="ann", printer="printer-01", hold=False)
    await service.front.submit(meta, staged, key, KIOSK)


async def _beats(*pairs: tuple[LeaseKeeper, Clock], until: float, step: float = 1.0) -> None:
    """Heartbeats of every keeper, ``step`` seconds apart on each one's clock, ``until`` s."""
    elapsed = 0.0
    while elapsed < until:
        for keeper, clock in pairs:
            clock.now += step
            await keeper.beat()
        elapsed += step


async def test_a_stale_owners_claim_copy_and_outcome_change_nothing(
    tmp_path: Path, store: Store
) -> None:
    """After a takeover (epoch 2) the old owner's copy write, completion and claim match no row,
    while the new owner's writes go through: the epoch in every WHERE fences the stale owner."""
    async with (
        _appliance(tmp_path, store, "a") as (a, keep_a, clock_a),
        _appliance(tmp_path, store, "b") as (b, keep_b, clock_b),
    ):
        await keep_a.beat()
        assert keep_a.fence.epochs == dict.fromkeys(PRINTERS, 1)
        await _released(a, "lease-key-0001")
        job = await a.worker.claim_next("printer-01")
        assert job is not None
        assert job.state is JobState.PRINTING
        copy = await a.worker.open_copy(
            job, "printer-01", operation="Create-Job", document_format="application/pdf",
            printer_up_s=None,
        )  # fmt: skip
        assert copy is not None
        # a stops (a zombie): b sees no renewal for lease + margin and takes every printer
        await _beats((keep_b, clock_b), until=CLUSTER.lease_s + CLUSTER.margin_s + 2)
        assert keep_b.fence.epochs == dict.fromkeys(PRINTERS, 2)
        assert keep_b.next_beat_in() == CLUSTER.heartbeat_s
        assert keep_b.owner("printer-01") == ("b", 2)
        # the zombie wakes (its monotonic clock moved on meanwhile) with epoch 1 in hand:
        # nothing it writes changes a row
        clock_a.now += CLUSTER.lease_s + CLUSTER.margin_s + 2
        assert await a.worker.copy_created(copy, PrinterJobRef(7), sending=True) is None
        assert await a.outcomes.requeue(job, "printer-01", "stale", 0.0, count=False) is None
        assert await a.outcomes.fail(job, "printer-01", "poison", "stale") is None
        await _released(a, "lease-key-0002")
        assert await a.worker.claim_next("printer-01") is None
        # and its own clock says it may not send either
        assert not keep_a.may_send("printer-01")
        stored = await b.worker.copy(copy.id)
        assert stored is not None
        assert stored.state is CopyState.CREATING
        # the new owner settles what the old one left (as its reconciliation does)
        created = await b.worker.copy_created(copy, PrinterJobRef(7), sending=True)
        assert created is not None
        assert created.state is CopyState.SENDING
        back = await b.outcomes.requeue(job, "printer-01", "taken over", 0.0, count=False)
        assert isinstance(back, JobRecord)
        assert back.state is JobState.RELEASED
        claimed = await b.worker.claim_next("printer-01")
        assert claimed is not None
        assert claimed.printed_on == "printer-01"


async def test_leases_spread_over_live_appliances_and_a_dead_ones_are_taken(
    tmp_path: Path, store: Store
) -> None:
    """A lone appliance takes every printer; a second one gets ceil(3/2) - 1 = 1 printer after
    the first lets it lapse; when the second stops beating, the first takes it back with the
    next epoch and counts a takeover."""
    async with (
        _appliance(tmp_path, store, "a") as (_, keep_a, clock_a),
        _appliance(tmp_path, store, "b") as (b, keep_b, clock_b),
    ):
        await keep_a.beat()
        assert set(keep_a.fence.epochs) == set(PRINTERS)
        await _beats((keep_b, clock_b), (keep_a, clock_a), until=1)
        assert keep_b.fence.epochs == {}  # none free: a's leases are renewed
        # a sees b and lets its last printer lapse; b waits the lease + margin out
        await _beats(
            (keep_b, clock_b), (keep_a, clock_a), until=CLUSTER.lease_s + CLUSTER.margin_s + 2
        )
        assert set(keep_a.fence.epochs) == {"printer-01", "printer-02"}
        assert keep_b.fence.epochs == {"printer-03": 2}
        taken = b.metrics.registry.get_sample_value(
            "edgeprint_printer_takeovers_total", {"printer": "printer-03"}
        )
        assert taken == 1
        # b dies: a takes printer-03 back once it has seen no renewal for lease + margin
        await _beats((keep_a, clock_a), until=CLUSTER.lease_s + CLUSTER.margin_s + 2)
        assert keep_a.fence.epochs == {"printer-01": 1, "printer-02": 1, "printer-03": 3}
        assert keep_a.owner("printer-03") == ("a", 3)


async def test_a_dead_owners_leases_are_taken_when_they_lapse_not_a_beat_later(
    tmp_path: Path, store: Store
) -> None:
    """While the owner renews, the next beat is a heartbeat away; once its rows stop changing
    the taker's next beat is timed for lease + margin after it first saw them, and takes them
    then (3.5 s by default, not the 4 s of whole heartbeats)."""
    async with (
        _appliance(tmp_path, store, "a") as (_, keep_a, clock_a),
        _appliance(tmp_path, store, "b") as (_, keep_b, clock_b),
    ):
        await keep_a.beat()
        await _beats(  # a beats first: b's last beat sees a's last renewal
            (keep_a, clock_a), (keep_b, clock_b), until=CLUSTER.lease_s + CLUSTER.margin_s + 2
        )
        assert keep_b.fence.epochs == {"printer-03": 2}  # a keeps its share, renewing it
        assert keep_b.next_beat_in() == CLUSTER.heartbeat_s  # a renews: nothing lapses soon
        seen = clock_b.now  # b's last sight of a's renewal; a dies here
        lapses = seen + CLUSTER.lease_s + CLUSTER.margin_s
        while clock_b.now + keep_b.next_beat_in() < lapses:
            clock_b.now += keep_b.next_beat_in()
            await keep_b.beat()
            assert keep_b.fence.epochs == {"printer-03": 2}
        assert lapses - clock_b.now < CLUSTER.heartbeat_s  # the beat before the lapse
        clock_b.now += keep_b.next_beat_in()
        assert clock_b.now - lapses == pytest.approx(0.01)
        await keep_b.beat()
        assert keep_b.fence.epochs == dict.fromkeys(PRINTERS, 2)
        assert keep_b.next_beat_in() == CLUSTER.heartbeat_s


async def test_an_owner_stops_sending_before_a_taker_may_start(
    tmp_path: Path, store: Store
) -> None:
    """The owner's own clock forbids sending from lease - margin after its last renewal began;
    a taker that saw that renewal cannot take the lease before lease + margin has passed."""
    async with (
        _appliance(tmp_path, store, "a") as (_, keep_a, clock_a),
        _appliance(tmp_path, store, "b") as (_, keep_b, clock_b),
    ):
        await keep_a.beat()
        renewed = clock_a.now
        await keep_b.beat()  # b sees a's rows now (its clock: first sight)
        seen = clock_b.now
        clock_a.now = renewed + CLUSTER.lease_s - CLUSTER.margin_s - 0.01
        assert keep_a.may_send("printer-01")
        clock_a.now += 0.02
        assert not keep_a.may_send("printer-01")
        clock_b.now = seen + CLUSTER.lease_s + CLUSTER.margin_s - 0.01
        await keep_b.beat()
        assert keep_b.fence.epochs == {}
        clock_b.now += 0.02
        await keep_b.beat()
        assert set(keep_b.fence.epochs) == set(PRINTERS)


async def test_two_takers_of_one_lapsed_lease_one_wins(tmp_path: Path, store: Store) -> None:
    """Two appliances taking the same lapsed lease: the conditional take lets exactly one have
    the next epoch."""
    leases = Leases(store)
    first = await leases.take("printer-01", "a", seen=None, expires_at=1.0)
    assert first is not None
    assert first.epoch == 1
    assert await leases.take("printer-01", "b", seen=None, expires_at=1.0) is None
    won = [await leases.take("printer-01", who, seen=first, expires_at=2.0) for who in ("b", "c")]
    assert [w.owner if w else None for w in won] == ["b", None]
    assert (await leases.all())["printer-01"].epoch == 2
    assert not await leases.renew("printer-01", "a", 1, expires_at=3.0)


@pytest.mark.parametrize(
    ("cluster", "says"),
    [
        ({"lease_s": 3.0, "heartbeat_s": 1.5}, "cluster.heartbeat_s: 1.5 s is not comfortably"),
        ({"lease_s": 3.0, "heartbeat_s": 1.0, "margin_s": 2.0}, "cluster.margin_s: 2.0 s"),
    ],
)
def test_a_heartbeat_not_well_inside_the_lease_is_refused(
    tmp_path: Path, cluster: dict[str, float], says: str
) -> None:
    """Start-up refuses a heartbeat longer than lease_s / 3 (or a margin that eats the lease),
    naming the keys."""
    with pytest.raises(errors.ConfigError) as refused:
        parse_config({**config_dict(tmp_path), "cluster": cluster})
    assert says in str(refused.value)
    assert "cluster.lease_s" in str(refused.value)


def test_cluster_defaults_fit_the_takeover_budget() -> None:
    """The defaults: a lease of at most 5 s, renewed at least three times per lease."""
    cfg = ClusterConfig()
    assert cfg.lease_s <= 5.0
    assert cfg.heartbeat_s * 3 <= cfg.lease_s
    assert cfg.appliance_id


async def test_a_reload_adds_a_printer_to_the_leases(tmp_path: Path, store: Store) -> None:
    """A printer added by a reload is leased at the next beat; a removed one is no longer
    renewed, so another appliance may take it once it lapsed."""
    async with (
        _appliance(tmp_path, store, "a") as (_, keep_a, clock_a),
        _appliance(tmp_path, store, "b") as (_, keep_b, clock_b),
    ):
        keep_a.set_printers(["printer-01"])
        await keep_a.beat()
        assert keep_a.fence.epochs == {"printer-01": 1}
        keep_a.set_printers(["printer-01", "printer-04"])
        clock_a.now += 1
        await keep_a.beat()
        assert keep_a.fence.epochs == {"printer-01": 1, "printer-04": 1}
        keep_a.set_printers(["printer-04"])
        keep_b.set_printers(["printer-01"])
        await _beats(
            (keep_a, clock_a), (keep_b, clock_b), until=CLUSTER.lease_s + CLUSTER.margin_s + 2
        )
        assert keep_b.fence.epochs == {"printer-01": 2}
        assert "printer-01" not in keep_a.fence.epochs
        assert keep_a.fence.epochs["printer-04"] == 1
