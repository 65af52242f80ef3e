"""Many jobs at once: release, cancel, replay or resolve jobs chosen by id or by a filter.

Each selected job goes through its single-job use case (:meth:`Front.release`,
``cancel``, ``replay``, :meth:`Resolutions.resolve`), so its conditional write stays the
only arbiter: a job acted on by a bulk call and, at the same moment, by another bulk call
or a single call is acted on exactly once, and every loser is told ``conflict`` with the
state it found. A bulk call is therefore not one transaction: each job's outcome is its
own, and the answer lists them all (DESIGN §5, "Many jobs at once, reprints").
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from edgeprint import errors
from edgeprint.logs import log_event
from edgeprint.service.jobs import JobService
from edgeprint.service.records import Caller, JobRecord
from edgeprint.states import Action, JobState, sources
from edgeprint.store.selection import JobFilter, Selection

log = logging.getLogger(__name__)

#: Jobs acted on at once within one bulk call: enough to fill the store's group commit,
#: few enough that one call does not crowd out single calls and the printers' workers.
_IN_FLIGHT = 8

#: Why an empty filter is refused.
EMPTY_FILTER = (
    "a filter needs at least one of owner, pool, printer, state, dead_reason, "
    "created_after, created_before"
)

#: The dead reason a resolution applies to.
OUTCOME_UNKNOWN = "outcome_unknown"


@dataclass(frozen=True, slots=True)
class BulkFilter:
    """What the selected jobs are; ``state`` None: every state the action applies to."""

    state: JobState | None = None
    owner: str | None = None
    pool: str | None = None
    printer: str | None = None
    dead_reason: str | None = None
    created_after: float | None = None
    created_before: float | None = None


@dataclass(frozen=True, slots=True)
class Selector:
    """Exactly one of ``ids`` and ``where``, and the most jobs to act on."""

    limit: int
    ids: Sequence[str] | None = None
    where: BulkFilter | None = None
    #: Act on nothing: answer what would be taken (outcome ``selected``, the state now).
    dry_run: bool = False


@dataclass(frozen=True, slots=True)
class BulkResult:
    """One job's outcome: the action's word (``released`` …) or why not (``conflict`` …)."""

    id: str
    outcome: str
    state: JobState | None
    detail: str | None = None


@dataclass(frozen=True, slots=True)
class BulkAnswer:
    matched: int
    more: bool
    results: list[BulkResult]


#: Per action: the word for done, and the states it applies to.
_DONE_WORD = {
    Action.RELEASE: "released",
    Action.CANCEL: "cancelled",
    Action.REPLAY: "replayed",
    Action.RESOLVE: "resolved",
}
_SOURCES = {
    Action.RELEASE: sources(Action.RELEASE),
    Action.CANCEL: sources(Action.CANCEL),
    Action.REPLAY: sources(Action.REPLAY),
    Action.RESOLVE: sources(Action.RESOLVE),
}


def _why_not(exc: errors.EdgeprintError) -> str:
    """The outcome word for a job a single-job use case refused."""
    match exc:
        case errors.StateConflict():
            return "conflict"
        case errors.JobNotFound():
            return "not-found"
        case errors.PinRequired() | errors.PinMismatch() | errors.ReleaseLocked():
            return "pin-required"
        case errors.Backpressure():
            return "queue-full"
        case errors.DocumentUnprintable():
            return "unsupported-document"
        case errors.MissingTarget():
            return "missing-target"
        case errors.StorageFull():
            return "storage-full"
        case errors.StoreError():
            return "store-unavailable"
        case _:
            return "error"


class BulkActions:
    """The bulk use cases over the one :class:`JobService`."""

    def __init__(self, service: JobService) -> None:
        self._service = service
        self._selection = Selection(service.jobs.store)

    async def release(
        self, selector: Selector, caller: Caller, *, printer: str | None, pool: str | None
    ) -> BulkAnswer:
        """HELD → RELEASED for each selected job (to ``printer``/``pool`` when given).

        Raises errors.UnknownTarget (nothing done) before any job is touched."""
        self._service.check_target(printer, pool, "body")

        async def one(job_id: str) -> JobRecord:
            return await self._service.front.release(job_id, caller, printer=printer, pool=pool)

        return await self._run(Action.RELEASE, selector, caller, one)

    async def cancel(self, selector: Selector, caller: Caller) -> BulkAnswer:
        """→ CANCELLED for each selected job (a PRINTING one: ``cancel-requested``)."""

        async def one(job_id: str) -> JobRecord:
            return await self._service.front.cancel(job_id, caller)

        return await self._run(Action.CANCEL, selector, caller, one)

    async def replay(self, selector: Selector, caller: Caller) -> BulkAnswer:
        """DEAD → RELEASED once for each selected job."""

        async def one(job_id: str) -> JobRecord:
            return await self._service.front.replay(job_id, caller)

        return await self._run(Action.REPLAY, selector, caller, one)

    async def resolve(self, selector: Selector, caller: Caller, *, printed: bool) -> BulkAnswer:
        """Each selected DEAD ``outcome_unknown`` job: printed → DONE, else RELEASED."""

        async def one(job_id: str) -> JobRecord:
            return await self._service.resolutions.resolve(job_id, caller, printed=printed)

        return await self._run(Action.RESOLVE, selector, caller, one)

    # --- the common part ---------------------------------------------------------------

    async def _run(
        self,
        action: Action,
        selector: Selector,
        caller: Caller,
        one: Callable[[str], Awaitable[JobRecord]],
    ) -> BulkAnswer:
        ids, more = await self._select(action, selector)
        if selector.dry_run:
            return BulkAnswer(len(ids), more, [await self._dry(action, i) for i in ids])
        gate = asyncio.Semaphore(_IN_FLIGHT)

        async def act(job_id: str) -> BulkResult:
            async with gate:
                return await self._one(action, job_id, one)

        results = list(await asyncio.gather(*(act(i) for i in ids)))
        outcomes = collections.Counter(r.outcome for r in results)
        log_event(
            log,
            f"bulk_{action.value}",
            message=f"bulk {action.value}",
            matched=len(ids),
            more=more,
            by_filter=selector.where is not None,
            outcomes=dict(outcomes),
            actor=caller.name,
            correlation_id=caller.correlation_id,
        )
        return BulkAnswer(matched=len(ids), more=more, results=results)

    async def _one(
        self, action: Action, job_id: str, one: Callable[[str], Awaitable[JobRecord]]
    ) -> BulkResult:
        try:
            job = await one(job_id)
        except errors.EdgeprintError as exc:
            outcome = _why_not(exc)
            if isinstance(exc, errors.StateConflict):
                return BulkResult(job_id, outcome, JobState(exc.state), str(exc))
            detail = str(exc)
            if isinstance(exc, errors.PinRequired):
                # not the single call's 'send {"pin": …}': a bulk body takes no PIN
                detail = f"has a release PIN: {action.value} it alone with its PIN"
            return BulkResult(job_id, outcome, await self._state_now(job_id), detail)
        word = _DONE_WORD[action]
        if action is Action.CANCEL and job.state is JobState.PRINTING:
            word = "cancel-requested"
        return BulkResult(job_id, word, job.state)

    async def _dry(self, action: Action, job_id: str) -> BulkResult:
        """What a dry run says of one job: ``selected`` when its state now is one the action
        applies to (the real call may still find it moved on), else why not."""
        state = await self._state_now(job_id)
        if state is None:
            return BulkResult(job_id, "not-found", None)
        if state not in _SOURCES[action]:
            return BulkResult(job_id, "conflict", state, f"it is {state.value}")
        return BulkResult(job_id, "selected", state)

    async def _state_now(self, job_id: str) -> JobState | None:
        try:
            job = await self._service.jobs.get(job_id)
        except errors.StoreError:
            return None
        return None if job is None else job.state

    async def _select(self, action: Action, selector: Selector) -> tuple[list[str], bool]:
        """The ids to act on (in order, each once) and whether the filter matched more."""
        if selector.ids is not None:
            return list(dict.fromkeys(selector.ids))[: selector.limit], False
        where = selector.where or BulkFilter()
        self._check_filter(where)
        states = self._states(action, where)
        dead_reason = where.dead_reason
        if action is Action.RESOLVE:
            dead_reason = OUTCOME_UNKNOWN
        found = await self._selection.job_ids(
            JobFilter(
                states=states,
                owner=where.owner,
                pool=where.pool,
                printer=where.printer,
                dead_reason=dead_reason,
                created_after=where.created_after,
                created_before=where.created_before,
            ),
            selector.limit + 1,
        )
        return found[: selector.limit], len(found) > selector.limit

    def _check_filter(self, where: BulkFilter) -> None:
        """Refuse what would act on the wrong jobs (raises errors.InvalidRequest, nothing
        done): an empty filter is every job of every owner; a pool or printer that is not
        configured is a typo that would silently match nothing (errors.UnknownTarget)."""
        if where == BulkFilter():
            raise errors.InvalidRequest(
                EMPTY_FILTER, [errors.FieldProblem("body.filter", "give at least one field")]
            )
        self._service.check_target(where.printer, where.pool, "body.filter")

    @staticmethod
    def _states(action: Action, where: BulkFilter) -> tuple[JobState, ...]:
        """The states to select: the filter's one, which must be one the action applies to
        (raises errors.InvalidRequest), else all of them."""
        allowed = _SOURCES[action]
        problems: list[errors.FieldProblem] = []
        if where.state is not None and where.state not in allowed:
            names = ", ".join(s.value for s in allowed)
            problems.append(
                errors.FieldProblem("body.filter.state", f"{action.value} applies to {names}")
            )
        if where.dead_reason is not None and JobState.DEAD not in allowed:
            problems.append(
                errors.FieldProblem(
                    "body.filter.dead_reason", f"{action.value} does not apply to DEAD jobs"
                )
            )
        if (
            action is Action.RESOLVE
            and where.dead_reason is not None
            and where.dead_reason != OUTCOME_UNKNOWN
        ):
            problems.append(
                errors.FieldProblem(
                    "body.filter.dead_reason", f"resolve applies to {OUTCOME_UNKNOWN}"
                )
            )
        if problems:
            raise errors.InvalidRequest(
                f"the filter selects jobs {action.value} cannot act on", problems
            )
        return (where.state,) if where.state is not None else allowed
