"""Property-based tests of the job state machine (DESIGN §2), over a real SQLite file.

A hypothesis ``RuleBasedStateMachine`` drives a real :class:`JobService` (real
:class:`Store` with its group-commit writer, real spool; one temporary folder
and one event loop per example) through random sequences of the use cases —
submit (reusing Idempotency-Keys with the same or another payload), release,
cancel, replay, claim, a printer's complete / requeue / fail /
cancelled-at-printer, housekeeping (hold TTL, document retention) — and
through concurrent bursts, against a plain-Python
model of every job. After each step the stored rows and the append-only
``job_events`` history are checked against the model and against
:data:`states.TRANSITIONS`.

Concurrent bursts are checked for serializability: the outcomes (the winner,
the 409s, the claimed jobs) must be those of running the same calls one after
the other in *some* order, and what is stored must be that order's result.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
import shutil
import sqlite3
import tempfile
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Coroutine
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import Phase, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from edgeprint import errors
from edgeprint.board import PrinterBoard
from edgeprint.config import parse_config
from edgeprint.copies import CopyState, Kind
from edgeprint.metrics import Metrics
from edgeprint.models import SubmitMetadata
from edgeprint.records import JobRecord
from edgeprint.server import DB_FILE
from edgeprint.service import Caller, JobService
from edgeprint.spool import Spool
from edgeprint.states import (
    ALL_STATES,
    TERMINAL_STATES,
    TRANSITIONS,
    Action,
    JobState,
    sources,
    target,
)
from edgeprint.store import Store
from edgeprint.store.interface import Store as StoreInterface
from edgeprint.store.job_reads import ROW
from edgeprint.store.job_rows import PEER_FIRST_S
from edgeprint.store.jobs import GUARD_ON_PRINTER, GUARD_PRINTED, Jobs
from edgeprint.store.postgres import PostgresStore
from testbed.pdfs import make_pdf
from tests.conftest import config_dict
from tests.pg_fixtures import PostgresCluster

S = JobState
T = TypeVar("T")

PRINTERS = ("printer-01", "printer-02", "printer-03")
#: The pool of each printer in tests.conftest.config_dict.
POOL_OF: dict[str, str | None] = {"printer-01": "lobby", "printer-02": "lobby", "printer-03": None}
#: (printer, pool); (None, None) means "no target" (no release body / none in the metadata).
Target = tuple[str | None, str | None]
NO_TARGET: Target = (None, None)
TARGETS: tuple[Target, ...] = (
    NO_TARGET,
    ("printer-01", None),
    ("printer-02", None),
    ("printer-03", None),
    (None, "lobby"),
)
KIOSK_CALLS = ("release", "cancel", "replay")
#: What a printer's worker reports about a job it holds (JobService method in brackets):
#: complete, requeue, fail, cancelled.
PRINTER_CALLS = ("complete", "requeue", "fail", "cancelled")
#: The action each call applies when it changes the state.
ACTION_OF = {
    "release": Action.RELEASE,
    "cancel": Action.CANCEL,
    "replay": Action.REPLAY,
    "claim": Action.CLAIM,
    "complete": Action.COMPLETE,
    "requeue": Action.RETRY,
    "fail": Action.FAIL,
    "cancelled": Action.CANCEL,
}
#: The states in which each call does something (cancel of a PRINTING job only flags it).
APPLIES_TO: dict[str, frozenset[JobState]] = {
    "release": frozenset({S.HELD}),
    "cancel": frozenset({S.HELD, S.RELEASED, S.PRINTING, S.DEAD}),
    "replay": frozenset({S.DEAD}),
    **dict.fromkeys(PRINTER_CALLS, frozenset({S.PRINTING})),
}
#: Every (from, to) pair some action allows.
EDGES = frozenset((src, dst) for (src, _), dst in TRANSITIONS.items())
INITIAL_STATES = (S.HELD, S.RELEASED)
START = 1_700_000_000.0

KIOSK = Caller("kiosk-1", "kiosk", "corr-kiosk")
TECH = Caller("tech-1", "tech", "corr-tech")


# --- the model ------------------------------------------------------------------------


@dataclass(frozen=True)
class Payload:
    """What a kiosk sends: the metadata fields and the text of its one-page PDF."""

    owner: str
    target: Target
    hold: bool
    priority: int
    text: str

    def metadata(self) -> SubmitMetadata:
        printer, pool = self.target
        return SubmitMetadata(
            owner=self.owner, printer=printer, pool=pool, hold=self.hold, priority=self.priority
        )

    def document(self) -> bytes:
        return make_pdf(self.text)


@dataclass
class JobModel:
    """What the store must hold for one accepted job."""

    id: str
    key: str
    seq: int
    payload: Payload
    state: JobState
    printer: str | None
    pool: str | None
    priority: int
    not_before: float = 0.0
    printed_on: str | None = None
    attempts: int = 0
    cancel_requested: bool = False
    dead_reason: str | None = None
    created_at: float = 0.0
    finished_at: float | None = None
    document_deleted: bool = False
    history: list[JobState] = field(default_factory=list)

    def move(self, action: Action, now: float) -> None:
        new = TRANSITIONS[(self.state, action)]  # the model itself obeys the table
        self.state = new
        self.history.append(new)
        if new in TERMINAL_STATES:
            self.finished_at = now


Model = dict[str, JobModel]


def copy_model(model: Model) -> Model:
    return {k: replace(v, history=list(v.history)) for k, v in model.items()}


@dataclass(frozen=True)
class Op:
    """One service call that may run concurrently with others."""

    kind: str  # KIOSK_CALLS, PRINTER_CALLS or "claim"
    job_id: str | None = None
    target: Target = NO_TARGET  # release
    printer: str | None = None  # claim and printer calls: who asks
    delay: float = 0.0  # requeue: not before now + delay
    count: bool = True  # requeue: the attempt counts
    reason: str = "poison"  # fail: dead_reason

    def __str__(self) -> str:
        if self.kind == "claim":
            return f"claim_next({self.printer})"
        if self.kind in PRINTER_CALLS:
            return f"{self.kind}(job, {self.printer})"
        extra = f", {self.target}" if self.target != NO_TARGET else ""
        return f"{self.kind}(job{extra})"


#: ("ok", job id, or None for an empty claim) | ("conflict", state) | ("missing", None)
#: | ("refused", None): a printer call for a job that printer does not hold.
Outcome = tuple[str, str | None]


def claimable(model: Model, printer: str, now: float) -> list[JobModel]:
    """Jobs ``printer`` may claim, in the order it must claim them (DESIGN §4).

    Lowest priority number first, then — as documented at ``_CLAIM_NEXT`` in
    store/jobs.py — the printer's own jobs before its pool's jobs of the same
    priority, then acceptance order (seq).
    """
    pool = POOL_OF[printer]
    jobs = [
        j
        for j in model.values()
        if j.state is S.RELEASED
        and j.not_before <= now
        and (j.printer == printer or (j.printer is None and pool is not None and j.pool == pool))
    ]
    return sorted(jobs, key=lambda j: (j.priority, 0 if j.printer == printer else 1, j.seq))


def apply_op(model: Model, op: Op, now: float) -> Outcome:
    """Run ``op`` on the model (in place) and say what the service must answer."""
    if op.kind == "claim":
        assert op.printer is not None
        queue = claimable(model, op.printer, now)
        if not queue:
            return ("ok", None)
        job = queue[0]
        job.move(Action.CLAIM, now)
        job.printed_on = op.printer
        job.attempts += 1
        return ("ok", job.id)
    assert op.job_id is not None
    job = model[op.job_id]
    if job.state not in APPLIES_TO[op.kind]:
        return ("refused", None) if op.kind in PRINTER_CALLS else ("conflict", None)
    if op.kind in PRINTER_CALLS and job.printed_on != op.printer:
        return ("refused", None)  # only the printer that holds the job may report on it
    if op.kind == "release":
        if op.target != NO_TARGET:
            job.printer, job.pool = op.target
        elif job.printer is None and job.pool is None:
            return ("missing", None)
    # A PRINTING job here never has a live copy (a "complete" makes and settles its copy
    # in one go), so a cancel ends it at once (docs/decisions/0004).
    job.move(ACTION_OF[op.kind], now)
    if op.kind == "replay":
        job.attempts, job.not_before, job.printed_on, job.dead_reason = 0, 0.0, None, None
        job.cancel_requested = False  # a technician's fresh start
    elif op.kind == "requeue":
        job.not_before, job.printed_on = now + op.delay, None
        if not op.count:
            job.attempts = max(0, job.attempts - 1)
    elif op.kind == "fail":
        job.dead_reason = op.reason
    return ("ok", job.id)


# --- strategies -----------------------------------------------------------------------

payloads = st.builds(
    Payload,
    owner=st.sampled_from(["ann", "bob"]),
    target=st.sampled_from(TARGETS),
    hold=st.booleans(),
    priority=st.sampled_from([0, 10, 100, 1000]),
    text=st.sampled_from(["badge", "ticket"]),
).map(lambda p: p if p.hold or p.target != NO_TARGET else replace(p, hold=True))
indexes = st.integers(min_value=0, max_value=63)
kiosk_calls = st.sampled_from(KIOSK_CALLS)
printer_calls = st.sampled_from(PRINTER_CALLS)
printers = st.sampled_from(PRINTERS)
targets = st.sampled_from(TARGETS)
#: Which printer reports on a job: the one holding it, or one of the two others.
reporters = st.sampled_from(["holder", "peer", "other"])
delays = st.sampled_from([0.0, 5.0, 30.0])
dead_reasons = st.sampled_from(["poison", "attempts_exhausted", "outcome_unknown"])


@st.composite
def printer_reports(draw: st.DrawFn) -> dict[str, Any]:
    """The arguments of one printer call, except the job and the printer."""
    return {
        "kind": draw(printer_calls),
        "delay": draw(delays),
        "count": draw(st.booleans()),
        "reason": draw(dead_reasons),
    }


# --- the machine ----------------------------------------------------------------------


class _Rings:
    """Records the service's rings on the board (what a dispatcher would act on)."""

    def __init__(self, wakes: list[Target], controls: list[str | None]) -> None:
        self.wakes, self.controls = wakes, controls

    def wake(self, printer: str | None, pool: str | None) -> None:
        self.wakes.append((printer, pool))

    def control(self, printer: str | None) -> None:
        self.controls.append(printer)

    def resumed(self, printer: str | None) -> None:
        return None


class JobLifecycle(RuleBasedStateMachine):
    """A real JobService over a real SQLite file, one per example, checked against a model."""

    def __init__(self, store_url: str | None = None) -> None:
        """``store_url``: a PostgreSQL URL (a fresh schema) instead of the SQLite file."""
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="edgeprint-sm-"))
        self.loop = asyncio.new_event_loop()
        self.now = START
        config = parse_config(config_dict(self.tmp / "data"))
        data_dir = config.server.data_dir
        data_dir.mkdir(parents=True)
        self.spool = Spool(data_dir)
        self.spool.prepare()
        self.store: StoreInterface = (
            Store(
                data_dir / DB_FILE,
                synchronous=config.store.synchronous,
                busy_timeout_ms=config.store.busy_timeout_ms,
                max_batch=config.store.max_batch,
            )
            if store_url is None
            else PostgresStore(store_url)
        )
        try:
            self.loop.run_until_complete(self.store.open())
        except BaseException:
            self._close()
            raise
        self.jobs = Jobs(self.store)
        self.wakes: list[Target] = []
        self.cancel_signals: list[str | None] = []
        board = PrinterBoard()
        board.listen(_Rings(self.wakes, self.cancel_signals))
        self.service = JobService(
            config, self.jobs, self.spool, Metrics(), board=board, clock=lambda: self.now
        )
        self.model: Model = {}
        self.keys: dict[str, str] = {}  # Idempotency-Key → job id
        self.key_count = 0
        self.seen_rows: dict[str, dict[str, Any]] = {}
        self.seen_events: dict[str, list[tuple[JobState | None, JobState]]] = {}

    def teardown(self) -> None:
        try:
            self.loop.run_until_complete(self.store.close())
        finally:
            self._close()

    def _close(self) -> None:
        try:
            self.loop.run_until_complete(self.loop.shutdown_default_executor())
        finally:
            self.loop.close()
            shutil.rmtree(self.tmp, ignore_errors=True)

    # --- helpers --------------------------------------------------------------------

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coro)

    def ordered(self, states: frozenset[JobState] | None = None) -> list[JobModel]:
        jobs = sorted(self.model.values(), key=lambda j: j.seq)
        return [j for j in jobs if states is None or j.state in states]

    def pick(self, which: int, call: str | None = None) -> JobModel:
        """The ``which``-th job (modulo), among those ``call`` applies to if there are any."""
        jobs = self.ordered(APPLIES_TO[call]) if call is not None else []
        jobs = jobs or self.ordered()
        return jobs[which % len(jobs)]

    def reporter(self, job: JobModel, who: str) -> str:
        others = [p for p in PRINTERS if p != job.printed_on]
        if who == "holder" and job.printed_on is not None:
            return job.printed_on
        return others[0] if who == "peer" else others[1]

    def printer_for(self, which: int, aim: bool) -> str:
        """A printer with claimable work when ``aim`` and there is one, else any printer."""
        busy = [p for p in PRINTERS if claimable(self.model, p, self.now)] if aim else []
        choices = busy or list(PRINTERS)
        return choices[which % len(choices)]

    def new_key(self) -> str:
        self.key_count += 1
        return f"sm-key-{self.key_count:06d}"

    async def _submit(self, payload: Payload, key: str) -> Any:
        staged = self.spool.stage()
        staged.write(payload.document())
        return await self.service.front.submit(payload.metadata(), staged, key, KIOSK)

    def _accept(self, record: JobRecord, payload: Payload, key: str) -> None:
        """Add a newly created job to the model."""
        assert record.id not in self.model
        assert all(record.seq > j.seq for j in self.model.values()), "seq is acceptance order"
        state = S.HELD if payload.hold else S.RELEASED
        assert record.state is state
        printer, pool = payload.target
        self.model[record.id] = JobModel(
            id=record.id,
            key=key,
            seq=record.seq,
            payload=payload,
            state=state,
            printer=printer,
            pool=pool,
            priority=payload.priority,
            created_at=self.now,
            history=[state],
        )
        self.keys[key] = record.id

    async def _call(self, op: Op, held: dict[str, JobRecord]) -> JobRecord | None:
        """Call the service; ``held`` has the record a worker would hold for printer calls."""
        s = self.service
        if op.kind == "claim":
            assert op.printer is not None
            return await s.worker.claim_next(op.printer)
        assert op.job_id is not None
        if op.kind == "release":
            printer, pool = op.target
            return await s.front.release(op.job_id, KIOSK, printer=printer, pool=pool)
        if op.kind == "cancel":
            return await s.front.cancel(op.job_id, KIOSK)
        if op.kind == "replay":
            return await s.front.replay(op.job_id, TECH)
        job, printer = held[op.job_id], op.printer
        assert printer is not None
        if op.kind == "complete":
            return await _printed_whole(self.store, job, printer, self.now)
        if op.kind == "requeue":
            error = "server-error-busy" if not op.count else "printer job aborted"
            return await s.outcomes.requeue(
                job, printer, error, self.now + op.delay, count=op.count
            )
        if op.kind == "fail":
            return await s.outcomes.fail(job, printer, op.reason, "document-unprintable")
        assert op.kind == "cancelled"
        return await s.outcomes.cancelled(job, printer)

    @staticmethod
    def _outcome(op: Op, result: JobRecord | BaseException | None) -> Outcome:
        if isinstance(result, errors.StateConflict):
            assert op.kind in KIOSK_CALLS
            assert result.job_id == op.job_id
            return ("conflict", result.state)
        if isinstance(result, errors.MissingTarget):
            assert op.kind == "release"
            return ("missing", None)
        if isinstance(result, BaseException):
            raise result
        if result is None:
            assert op.kind == "claim" or op.kind in PRINTER_CALLS, f"{op} returned None"
            return ("ok", None) if op.kind == "claim" else ("refused", None)
        if op.kind == "claim":
            assert result.state is S.PRINTING
            assert result.printed_on == op.printer
            return ("ok", result.id)
        assert result.id == op.job_id
        assert result.state is target(ACTION_OF[op.kind])
        return ("ok", result.id)

    def run_ops(self, ops: list[Op]) -> list[Outcome]:
        """Run ``ops`` concurrently; check that some serial order explains what happened.

        The model becomes that order's result. Returns the actual outcomes.
        """
        wakes_before, signals_before = len(self.wakes), len(self.cancel_signals)
        reported_on = {op.job_id for op in ops if op.kind in PRINTER_CALLS}

        async def together() -> list[JobRecord | BaseException | None]:
            # the record each reporting worker holds, read before the calls start
            held: dict[str, JobRecord] = {}
            for job_id in reported_on:
                assert job_id is not None
                held[job_id] = await self.service.get(job_id)
            return await asyncio.gather(
                *(self._call(op, held) for op in ops), return_exceptions=True
            )

        results = self.run(together())
        actual = [self._outcome(op, r) for op, r in zip(ops, results, strict=True)]
        stored = {r["id"]: dict(r) for r in self.run(self.store.read(f"SELECT {ROW} FROM jobs"))}
        for order in itertools.permutations(range(len(ops))):
            model = copy_model(self.model)
            predicted: dict[int, Outcome] = {}
            seen: dict[int, set[str]] = defaultdict(set)  # states each op's job had from its turn
            for pos, i in enumerate(order):
                predicted[i] = apply_op(model, ops[i], self.now)
                for j in order[: pos + 1]:
                    if ops[j].job_id is not None:
                        seen[j].add(model[ops[j].job_id].state.value)
            explained = all(
                predicted[i][0] == actual[i][0]
                and (
                    # a 409 reports a state the job had at or after that call's turn
                    actual[i][1] in seen[i]
                    if actual[i][0] == "conflict"
                    else predicted[i] == actual[i]
                )
                for i in range(len(ops))
            )
            if explained and all(
                (j.state.value, bool(j.cancel_requested))
                == (stored[j.id]["state"], bool(stored[j.id]["cancel_requested"]))
                for j in model.values()
            ):
                self.model = model
                break
        else:
            before = {j.id[:8]: (j.state.value, j.printed_on) for j in self.model.values()}
            after = {k[:8]: (v["state"], v["printed_on"]) for k, v in stored.items()}
            raise AssertionError(
                f"no serial order of {[str(op) for op in ops]} explains {actual}; "
                f"jobs before: {before}; stored after: {after}; claimable before: "
                f"{ {p: [j.id[:8] for j in claimable(self.model, p, self.now)] for p in PRINTERS} }"
            )
        for op, (kind, job_id) in zip(ops, actual, strict=True):
            event(
                f"{op.kind}: {kind}"
                + (" (nothing to claim)" if op.kind == "claim" and job_id is None else "")
            )

        # wake-ups for jobs that became printable (again); Cancel-Job signals for flagged jobs
        woken = [
            (r.printer, r.pool)
            for op, r in zip(ops, results, strict=True)
            if op.kind in ("release", "replay", "requeue") and isinstance(r, JobRecord)
        ]
        assert Counter(self.wakes[wakes_before:]) == Counter(woken)
        flagged = [
            r.printed_on
            for op, r in zip(ops, results, strict=True)
            if op.kind == "cancel" and isinstance(r, JobRecord) and r.state is S.PRINTING
        ]
        assert Counter(self.cancel_signals[signals_before:]) == Counter(flagged)
        return actual

    # --- rules: kiosks and technicians ------------------------------------------------

    def _submit_new(self, payload: Payload) -> None:
        key = self.new_key()
        result = self.run(self._submit(payload, key))
        assert result.created
        self._accept(result.job, payload, key)
        if not payload.hold:
            assert self.wakes[-1] == payload.target

    @initialize(first=st.lists(payloads, min_size=1, max_size=4))
    def accept_some(self, first: list[Payload]) -> None:
        for payload in first:
            self._submit_new(payload)

    @rule(payload=payloads)
    def submit(self, payload: Payload) -> None:
        self._submit_new(payload)

    @precondition(lambda self: self.keys)
    @rule(which=indexes, same=st.booleans(), other=payloads)
    def resubmit(self, which: int, same: bool, other: Payload) -> None:
        """A client retry with an earlier Idempotency-Key: same payload → same job, else 422."""
        job = self.pick(which)
        payload = job.payload if same else other
        if payload != job.payload:
            with pytest.raises(errors.IdempotencyKeyReused) as refused:
                self.run(self._submit(payload, job.key))
            assert refused.value.job_id == job.id
            return
        result = self.run(self._submit(payload, job.key))
        assert not result.created
        assert result.job.id == job.id
        assert result.job.state is job.state

    @rule(first=payloads, same=st.lists(st.booleans(), min_size=1, max_size=3))
    def submit_race(self, first: Payload, same: list[bool]) -> None:
        """Concurrent submissions with one new key: one job; the others replay it or get 422.

        Which payload wins depends on thread timing (documents are committed in a
        worker thread), so the payloads differ only in owner and document: every
        possible winner leaves the model in the same state (hypothesis needs that).
        """
        key = self.new_key()
        other = replace(
            first,
            owner="zoe" if first.owner != "zoe" else "ann",
            text="flyer" if first.text != "flyer" else "badge",
        )
        sent = [first] + [first if s else other for s in same]

        async def race() -> list[Any]:
            return await asyncio.gather(
                *(self._submit(p, key) for p in sent), return_exceptions=True
            )

        results = self.run(race())
        for r in results:
            if isinstance(r, BaseException) and not isinstance(r, errors.IdempotencyKeyReused):
                raise r
        created = [
            (p, r.job)
            for p, r in zip(sent, results, strict=True)
            if not isinstance(r, BaseException) and r.created
        ]
        assert len(created) == 1, f"{len(created)} jobs created for one key"
        winner_payload, winner = created[0]
        for p, r in zip(sent, results, strict=True):
            if p == winner_payload:
                assert not isinstance(r, BaseException), r
                assert r.job.id == winner.id
            else:
                assert isinstance(r, errors.IdempotencyKeyReused)
                assert r.job_id == winner.id
        self._accept(winner, winner_payload, key)
        if not winner_payload.hold:
            assert winner_payload.target in self.wakes

    @precondition(lambda self: self.model)
    @rule(which=indexes, call=kiosk_calls, to=targets, aim=st.booleans())
    def kiosk(self, which: int, call: str, to: Target, aim: bool) -> None:
        """release (with or without a target), cancel or replay one job."""
        self.run_ops([Op(call, self.pick(which, call if aim else None).id, target=to)])

    @rule(call=kiosk_calls)
    def unknown_job(self, call: str) -> None:
        with pytest.raises(errors.JobNotFound):
            self.run(self._call(Op(call, "0" * 32), {}))

    @rule(wait=st.sampled_from(["1 s", "hold TTL", "retention"]))
    def housekeeping(self, wait: str) -> None:
        """Time passes; held jobs past the hold TTL expire, old terminal documents go."""
        retention = self.service.config.retention
        self.now += {
            "1 s": 1.0,
            "hold TTL": retention.hold_ttl_s + 1.0,
            "retention": retention.document_retention_s + 1.0,
        }[wait]
        expired, deleted = self.run(self.service.upkeep.housekeeping())
        want = [
            j
            for j in self.ordered()
            if j.state is S.HELD and j.created_at < self.now - retention.hold_ttl_s
        ]
        assert sorted(expired) == sorted(j.id for j in want)
        for job in want:
            job.move(Action.EXPIRE, self.now)
        due = [
            j
            for j in self.model.values()
            if j.state in TERMINAL_STATES
            and not j.document_deleted
            and j.finished_at is not None
            and j.finished_at < self.now - retention.document_retention_s
        ]
        assert deleted == len(due)
        for job in due:
            job.document_deleted = True
        event(f"housekeeping: expired {bool(want)}, documents deleted {bool(deleted)}")

    @precondition(lambda self: any(j.state is S.DEAD for j in self.model.values()))
    @rule(which=indexes, n=st.integers(min_value=1, max_value=4))
    def replay_dead(self, which: int, n: int) -> None:
        """Technicians replaying a dead job, maybe several at once: it is replayed once."""
        job = self.pick(which, "replay")
        actual = self.run_ops([Op("replay", job.id)] * n)
        assert Counter(kind for kind, _ in actual) == Counter(ok=1, conflict=n - 1)
        assert self.model[job.id].state is S.RELEASED

    # --- rules: concurrency ----------------------------------------------------------

    @precondition(lambda self: self.model)
    @rule(
        which=indexes,
        call=kiosk_calls,
        n=st.integers(min_value=2, max_value=5),
        to=targets,
        aim=st.booleans(),
    )
    def burst(self, which: int, call: str, n: int, to: Target, aim: bool) -> None:
        """Identical calls on one job at once: exactly one wins, the others get 409."""
        job = self.pick(which, call if aim else None)
        alone = apply_op(copy_model(self.model), Op(call, job.id, target=to), self.now)
        actual = self.run_ops([Op(call, job.id, target=to)] * n)
        kinds = Counter(kind for kind, _ in actual)
        if alone[0] == "ok":  # a PRINTING job without a live copy is cancelled at once too
            assert kinds == Counter(ok=1, conflict=n - 1), actual
        else:
            assert kinds == Counter({alone[0]: n}), actual
        reported = {state for kind, state in actual if kind == "conflict"}
        assert reported <= {self.model[job.id].state.value}, "409 with a stale state"

    @precondition(lambda self: self.model)
    @rule(
        which=indexes,
        calls=st.lists(
            st.one_of(
                st.tuples(kiosk_calls, targets),
                st.tuples(printer_reports(), reporters),
            ),
            min_size=2,
            max_size=4,
        ),
        aim=st.booleans(),
    )
    def mixed_burst(self, which: int, calls: list[tuple[Any, Any]], aim: bool) -> None:
        """Kiosk, technician and printer calls on one job at once act in some serial order."""
        first = calls[0][0]
        job = self.pick(
            which, (first if isinstance(first, str) else first["kind"]) if aim else None
        )
        ops = []
        for what, how in calls:
            if isinstance(what, str):
                ops.append(Op(what, job.id, target=how))
            else:
                ops.append(Op(job_id=job.id, printer=self.reporter(job, how), **what))
        self.run_ops(ops)

    # --- rules: dispatcher -----------------------------------------------------------

    @rule(which=indexes, aim=st.booleans())
    def claim(self, which: int, aim: bool) -> None:
        """The next job is the lowest priority number, then the oldest, of that printer/pool."""
        self.run_ops([Op("claim", printer=self.printer_for(which, aim))])

    @rule(racers=st.lists(printers, min_size=2, max_size=4))
    def claim_race(self, racers: list[str]) -> None:
        """Printers claiming at once never get the same job, and take jobs in queue order."""
        actual = self.run_ops([Op("claim", printer=p) for p in racers])
        claimed = [job_id for _, job_id in actual if job_id is not None]
        assert len(claimed) == len(set(claimed)), "one job claimed twice"

    @precondition(lambda self: self.model)
    @rule(which=indexes, report=printer_reports(), who=reporters, aim=st.booleans())
    def printer_report(self, which: int, report: dict[str, Any], who: str, aim: bool) -> None:
        """A printer's outcome for a job: applied only to a PRINTING job that printer holds."""
        job = self.pick(which, report["kind"] if aim else None)
        self.run_ops([Op(job_id=job.id, printer=self.reporter(job, who), **report)])

    @rule(which=indexes, report=printer_reports())
    def dispatch(self, which: int, report: dict[str, Any]) -> None:
        """A worker's round: claim the next job, then report the printer's outcome for it."""
        printer = self.printer_for(which, aim=True)
        [(_, job_id)] = self.run_ops([Op("claim", printer=printer)])
        if job_id is not None:
            self.run_ops([Op(job_id=job_id, printer=printer, **report)])

    @rule(seconds=st.sampled_from([1.0, 5.0, 30.0]))
    def tick(self, seconds: float) -> None:
        self.now += seconds

    # --- invariants ------------------------------------------------------------------

    @invariant()
    def store_matches_model(self) -> None:
        self.run(self._check_store())

    async def _check_store(self) -> None:
        rows = {
            r["id"]: dict(r)
            for r in await self.store.read(
                f"SELECT {ROW}, (SELECT count(*) FROM copies c WHERE c.job_id = jobs.id "
                "AND c.state = 'printed') AS printed_copies FROM jobs"
            )
        }
        events = await self.store.read("SELECT * FROM job_events ORDER BY seq")
        counts = await self.jobs.count_by_state()

        # every accepted job is stored, in exactly one (valid) state, and nothing else is
        assert set(rows) == set(self.model), "jobs lost or invented"
        assert sum(counts.values()) == len(self.model)
        for state in ALL_STATES:
            assert counts[state] == sum(j.state is state for j in self.model.values())
        # one Idempotency-Key = one job
        assert {r["idempotency_key"]: i for i, r in rows.items()} == self.keys
        # every job's document is in the spool until retention deleted it; no other is
        kept = {j.id for j in self.model.values() if not j.document_deleted}
        assert self.spool.stored_ids() == kept, "spool and jobs disagree"

        chains: dict[str, list[tuple[JobState | None, JobState]]] = defaultdict(list)
        for e in events:
            assert e["job_id"] in self.model, "event for an unknown job"
            src = S(e["from_state"]) if e["from_state"] is not None else None
            dst = S(e["to_state"])
            chains[e["job_id"]].append((src, dst))
            if src is not None:
                assert (src, dst) in EDGES, f"{src} → {dst} is not in TRANSITIONS"
                if e["reason"] in set(Action):  # the reason names the action unless overridden
                    assert TRANSITIONS.get((src, Action(e["reason"]))) is dst

        for job_id, job in self.model.items():
            row = rows[job_id]
            state = S(row["state"])
            assert state is job.state, f"job {job_id[:8]} is {state}, the model says {job.state}"
            assert (row["printer"], row["pool"]) == (job.printer, job.pool)
            assert row["priority"] == job.priority
            assert row["attempts"] == job.attempts
            assert bool(row["cancel_requested"]) == job.cancel_requested
            if state is S.DONE:  # DONE only with a copy printed whole (DESIGN §3)
                assert row["printed_copies"] >= 1, f"job {job_id[:8]} DONE without a printed copy"
            if state is S.RELEASED:
                assert row["not_before"] == job.not_before
            if state in (S.PRINTING, S.DONE, S.DEAD):
                assert row["printed_on"] == job.printed_on
            if state is S.DEAD:
                assert row["dead_reason"] == job.dead_reason
            assert (row["document_deleted_at"] is not None) == job.document_deleted

            # the event history replays to the current state, with no gaps
            chain = chains[job_id]
            assert chain, "a job without events"
            assert chain[0][0] is None
            assert chain[0][1] in INITIAL_STATES
            for (_, prev_to), (next_from, _) in itertools.pairwise(chain):
                assert next_from is prev_to, f"gap in the history of {job_id[:8]}: {chain}"
            assert chain[-1][1] is state
            assert [dst for _, dst in chain] == job.history

            # the history is append-only; terminal jobs never change (but for retention
            # deleting their document)
            seen = self.seen_events.get(job_id, [])
            assert chain[: len(seen)] == seen, "event history rewritten"
            old = self.seen_rows.get(job_id)
            if old is not None and S(old["state"]) in TERMINAL_STATES:
                changed = {k for k in row if row[k] != old[k]} - {"document_deleted_at"}
                assert not changed, f"terminal job {job_id[:8]} changed: {changed}"
                assert chain == seen
            self.seen_rows[job_id] = row
            self.seen_events[job_id] = chain


JobLifecycle.TestCase.settings = settings(
    max_examples=60,
    stateful_step_count=30,
    deadline=None,
    # a failure is reported with its minimal sequence; skip the slow "explain" phase
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
)
TestJobLifecycle = JobLifecycle.TestCase


def test_job_lifecycle_on_postgresql(postgres: PostgresCluster) -> None:
    """The same machine, model and invariants hold with the PostgreSQL store (fewer examples:
    each one makes a schema)."""
    run_state_machine_as_test(
        lambda: JobLifecycle(store_url=postgres.url()),
        settings=settings(JobLifecycle.TestCase.settings, max_examples=25),
    )


# --- races found by the state machine, as plain regression tests --------------------


@contextlib.asynccontextmanager
async def _service(tmp_path: Path, store: StoreInterface) -> AsyncIterator[JobService]:
    """A JobService over ``store`` (open; either backend) and a spool in ``tmp_path``."""
    config = parse_config(config_dict(tmp_path / "data"))
    config.server.data_dir.mkdir(parents=True)
    spool = Spool(config.server.data_dir)
    spool.prepare()
    yield JobService(config, Jobs(store), spool, Metrics())


async def _printed_whole(
    store: StoreInterface, job: JobRecord, printer: str, now: float
) -> JobRecord | None:
    """A worker's report that ``job`` printed on ``printer``: a printed copy and DONE, atomically.

    Together in one unit so that the model's "complete" stays one step; the
    copy is only stored while the job is PRINTING there in that claim.
    """
    copy = (
        "INSERT INTO copies (job_id, claim, printer, state, operation, document_format, "
        "document_bytes, sent_at, acknowledged_at, actor, created_at, updated_at) "
        "SELECT id, claims, printed_on, 'printed', 'Create-Job', 'application/pdf', "
        "document_bytes, ?, ?, 'test', ?, ? FROM jobs "
        "WHERE id = ? AND state = 'PRINTING' AND printed_on = ? AND claims = ?"
    )
    done_sql, done_params = Jobs(store).transition_sql(
        job.id, Action.COMPLETE, now=now, actor=f"printer:{printer}",
        sets={"finished_at": now}, guard=f"{GUARD_ON_PRINTER} AND {GUARD_PRINTED}",
        guard_params=(printer, job.claims),
    )  # fmt: skip
    rows = await store.write_many(
        [(copy, (now, now, now, now, job.id, printer, job.claims)), (done_sql, done_params)]
    )
    return JobRecord.from_row(rows[1][0]) if rows[1] else None


async def _printing_job(service: JobService, pool: str | None = None) -> JobRecord:
    """A job accepted for printer-01 (or ``pool``) with hold=false and claimed by printer-01."""
    staged = service.spool.stage()
    staged.write(make_pdf())
    meta = SubmitMetadata(
        owner="ann", printer=None if pool else "printer-01", pool=pool, hold=False
    )
    await service.front.submit(meta, staged, "race-key-0001", KIOSK)
    job = await service.worker.claim_next("printer-01")
    assert job is not None
    assert job.state is S.PRINTING
    return job


@pytest.mark.parametrize("outcome", ["requeue", "fail"])
async def test_cancel_racing_the_workers_outcome_still_cancels(
    tmp_path: Path, store: StoreInterface, outcome: str
) -> None:
    """A cancel that meets a PRINTING job (no copy yet) as its worker requeues or fails it wins.

    Whichever write comes first, the job ends CANCELLED and the cancel is
    never refused (DESIGN §2 invariant 3: concurrent calls behave as in some
    serial order).
    """
    async with _service(tmp_path, store) as service:
        job = await _printing_job(service)
        worker = (
            service.outcomes.requeue(job, "printer-01", "server-error-busy", 0.0, count=False)
            if outcome == "requeue"
            else service.outcomes.fail(job, "printer-01", "poison", "document-unprintable")
        )
        cancelled, reported = await asyncio.gather(
            service.front.cancel(job.id, KIOSK), worker, return_exceptions=True
        )
        assert isinstance(cancelled, JobRecord), f"cancel refused: {cancelled!r}"
        assert cancelled.state is S.CANCELLED
        events = [e.to_state for e in await service.jobs.events(job.id)]
        if reported is None:  # the cancel came first
            assert events == [S.RELEASED, S.PRINTING, S.CANCELLED]
        else:
            assert isinstance(reported, JobRecord), reported
            assert events == [S.RELEASED, S.PRINTING, reported.state, S.CANCELLED]


async def test_cancel_of_a_job_with_a_copy_is_honoured_when_the_printer_refuses(
    tmp_path: Path, store: StoreInterface
) -> None:
    """A cancel flags the live copy; when the printer then refuses it (busy), the job is
    CANCELLED, never RELEASED again for a peer to print: the kiosk was told 202."""
    async with _service(tmp_path, store) as service:
        job = await _printing_job(service, pool="lobby")
        copy = await service.worker.open_copy(
            job, "printer-01", operation="Create-Job", document_format="application/pdf",
            printer_up_s=None,
        )  # fmt: skip
        assert copy is not None
        flagged = await service.front.cancel(job.id, KIOSK)
        assert (flagged.state, flagged.cancel_requested) == (S.PRINTING, True)
        refused = await service.outcomes.settle_copy(copy, CopyState.REFUSED, "server-error-busy")
        assert refused is not None
        verdict = service.outcomes.judge(job, await service.worker.copies_of(job.id))
        assert verdict.kind is Kind.CANCELLED
        out = await service.outcomes.settle_job(job, "printer-01", verdict)
        assert out is not None
        assert out.state is S.CANCELLED
        assert await service.worker.claim_next("printer-02") is None


async def test_a_pool_job_a_printer_failed_goes_to_its_peers_first(
    tmp_path: Path, store: StoreInterface
) -> None:
    """A pool job that aborted on printer-01 is left to the pool's other printers for
    PEER_FIRST_S once it is claimable again; only then may printer-01 retake it, and its
    worker is told when (a one-printer pool still retries; an aborting printer cannot burn
    one job's attempts while a peer idles)."""
    now = [1_000.0]
    async with _service(tmp_path, store) as service:
        service.clock = service.run = lambda: now[0]
        job = await _printing_job(service, pool="lobby")
        await service.outcomes.requeue(
            job, "printer-01", "aborted", 1_001.0, count=True, failure_sig="x"
        )
        now[0] = 1_001.0
        assert await service.worker.claim_next("printer-01") is None
        assert await service.worker.next_ready_at("printer-01") == 1_001.0 + PEER_FIRST_S
        assert await service.worker.next_ready_at("printer-02") is None  # claimable for it now
        now[0] = 1_001.0 + PEER_FIRST_S
        again = await service.worker.claim_next("printer-01")
        assert again is not None
        assert again.id == job.id
        await service.outcomes.requeue(
            again, "printer-01", "aborted", 2_000.0, count=True, failure_sig="x"
        )
        now[0] = 2_000.0
        assert await service.worker.claim_next("printer-01") is None
        peer = await service.worker.claim_next("printer-02")
        assert peer is not None
        assert (peer.id, peer.printed_on) == (job.id, "printer-02")


async def test_a_copy_left_behind_that_printed_lets_no_other_copy_be_made(
    tmp_path: Path, store: StoreInterface
) -> None:
    """A stuck job moved off printer-01 while its copy there was still being cancelled; the
    copy then turns out printed (adversary seed 473). A peer that claims the job gets no
    copy to make — the store refuses a copy of a job with one printed — and the job's
    copies make it DONE with that copy: never a second on paper."""
    async with _service(tmp_path, store) as service:
        job = await _printing_job(service, pool="lobby")
        left = await service.worker.open_copy(
            job, "printer-01", operation="Create-Job", document_format="application/pdf",
            printer_up_s=None,
        )  # fmt: skip
        assert left is not None
        left = await service.worker.copy_cancelling(left, "printer-01 cannot go on")
        assert left is not None
        moved = await service.outcomes.requeue(job, "printer-01", "stuck", 0.0, count=False)
        assert moved is not None
        assert moved.state is S.RELEASED
        printed = await service.outcomes.settle_copy(left, CopyState.PRINTED, "completed")
        assert printed is not None
        claimed = await service.worker.claim_and_open(
            "printer-02", operation="Create-Job", document_format="application/pdf",
            printer_up_s=None,
        )  # fmt: skip
        assert claimed is not None
        again, none = claimed
        assert (again.id, again.state, none) == (job.id, S.PRINTING, None)
        assert await service.worker.open_copy(
            again, "printer-02", operation="Create-Job", document_format="application/pdf",
            printer_up_s=None,
        ) is None  # fmt: skip
        verdict = service.outcomes.judge(again, await service.worker.copies_of(job.id))
        assert (verdict.kind, verdict.copy and verdict.copy.id) == (Kind.DONE, left.id)
        done = await service.outcomes.settle_job(again, "printer-02", verdict)
        assert done is not None
        assert (done.state, done.printed_on) == (S.DONE, "printer-01")  # where it came out
        assert [c.state for c in await service.worker.copies_of(job.id)] == [CopyState.PRINTED]


async def test_replay_clears_an_old_cancel_request(tmp_path: Path, store: StoreInterface) -> None:
    """A dead job replayed by a technician starts afresh: an earlier cancel request is gone."""
    async with _service(tmp_path, store) as service:
        job = await _printing_job(service)
        copy = await service.worker.open_copy(
            job, "printer-01", operation="Create-Job", document_format="application/pdf",
            printer_up_s=None,
        )  # fmt: skip
        assert copy is not None
        assert (await service.front.cancel(job.id, KIOSK)).cancel_requested
        dead = await service.outcomes.fail(job, "printer-01", "poison", "document-unprintable")
        assert dead is not None
        assert dead.state is S.DEAD
        replayed = await service.front.replay(job.id, TECH)
        assert (replayed.state, replayed.cancel_requested) == (S.RELEASED, False)


# --- the table and the schema ---------------------------------------------------------


def test_every_action_has_exactly_one_target_state() -> None:
    """Each action leads to one state, from at least one; terminal states have no exit."""
    for action in Action:
        targets = {dst for (_, act), dst in TRANSITIONS.items() if act is action}
        assert len(targets) == 1, f"{action} leads to {targets}"
        assert target(action) in targets
        assert sources(action), f"{action} is never allowed"
    for src, _ in TRANSITIONS:
        assert src not in TERMINAL_STATES, f"terminal state {src} has a transition"
    assert set(TRANSITIONS.values()) <= set(ALL_STATES)


def _state_check_values(create_sql: str) -> list[str]:
    match = re.search(r"\bstate\s+TEXT\b[^,]*?CHECK\s*\(\s*state\s+IN\s*\(([^)]*)\)", create_sql)
    assert match, f"no CHECK (state IN …) on jobs.state in {create_sql}"
    return re.findall(r"'([^']*)'", match.group(1))


async def test_schema_check_on_job_state_lists_exactly_all_states(tmp_path: Path) -> None:
    """The CHECK constraint on jobs.state, read back from sqlite_master, is ALL_STATES."""
    store = Store(tmp_path / DB_FILE)
    await store.open()
    try:
        rows = await store.read(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'jobs'"
        )
    finally:
        await store.close()
    values = _state_check_values(rows[0]["sql"])
    assert len(values) == len(set(values)), f"duplicates in {values}"
    assert set(values) == {s.value for s in ALL_STATES}

    # and SQLite enforces it
    with (
        contextlib.closing(sqlite3.connect(tmp_path / DB_FILE)) as db,
        pytest.raises(sqlite3.IntegrityError, match="CHECK"),
    ):
        db.execute(
            "INSERT INTO jobs (id, idempotency_key, request_sha256, state, owner, priority,"
            " copies, document_sha256, document_bytes, created_at, updated_at, token_name,"
            " actor) VALUES ('x', 'k', 'r', 'LOST', 'o', 1, 1, 'd', 0, 0, 0, 't', 'a')"
        )


async def test_postgresql_check_on_job_state_lists_exactly_all_states(pg_url: str) -> None:
    """The CHECK constraint on jobs.state in PostgreSQL, read back from its catalog, is
    ALL_STATES, and PostgreSQL enforces it."""
    store = PostgresStore(pg_url)
    await store.open()
    try:
        rows = await store.read(
            "SELECT pg_get_constraintdef(c.oid) FROM pg_constraint c "
            "JOIN pg_class t ON t.oid = c.conrelid "
            "WHERE t.relname = 'jobs' AND t.relnamespace = current_schema()::regnamespace "
            "AND c.contype = 'c' AND pg_get_constraintdef(c.oid) LIKE '%(state %'"
        )
        assert len(rows) == 1, rows
        values = re.findall(r"'([^']*)'::text", rows[0][0])
        assert len(values) == len(set(values)), f"duplicates in {values}"
        assert set(values) == {s.value for s in ALL_STATES}
        with pytest.raises(errors.StoreUnavailable, match="check constraint"):
            await store.write(
                "INSERT INTO jobs (id, idempotency_key, request_sha256, state, owner, priority,"
                " copies, document_sha256, document_bytes, created_at, updated_at, token_name,"
                " actor) VALUES ('x', 'k', 'r', 'LOST', 'o', 1, 1, 'd', 0, 0, 0, 't', 'a')"
            )
    finally:
        await store.close()
