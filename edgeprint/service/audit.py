"""Who did what (issue 26): one audit row and one JSON log line per action asked for.

The front doors call :meth:`AuditTrail.action` around the use case they run (an
HTTP route, an IPP operation, a release page, a reload); its outcome is ``done``
when the use case returned, ``conflict`` when it lost to the job's state (409) and
``refused`` for any other of our errors. The row is written right after the
decision, never inside the job's own transaction (DESIGN §5, "Who did what").

Nothing secret is written: the actor is a token's *name* (never the token), an IPP
user name, an owner's name or ``signal``; details are counts, ids and key names.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

from edgeprint import errors
from edgeprint.logs import log_event
from edgeprint.service.records import Caller
from edgeprint.store.audit import AuditEntry, AuditLog
from edgeprint.store.interface import Store

log = logging.getLogger(__name__)

#: Longest detail stored (a short note, not a document).
MAX_DETAIL = 200


@dataclass
class Note:
    """What the use case adds while it runs: a detail, and who it turned out to be (a
    release page's owner, known only once their code opened something)."""

    detail: str = ""
    actor: str | None = None
    kind: str | None = None
    target: str | None = None


def outcome_of(exc: BaseException | None) -> str:
    """``done`` (no error), ``conflict`` (the state said no: 409), else ``refused``."""
    if exc is None:
        return "done"
    if isinstance(exc, errors.StateConflict | errors.EventModeConflict | errors.CredentialTaken):
        return "conflict"
    return "refused"


class AuditTrail:
    """Writes and reads the audit trail of one store."""

    def __init__(self, store: Store, clock: Callable[[], float]) -> None:
        self.log = AuditLog(store)
        self._clock = clock
        #: Rows on their way to the store (the answer does not wait for their commit).
        self._writing: set[asyncio.Task[None]] = set()

    async def record(
        self,
        caller: Caller,
        action: str,
        target_kind: str,
        target: str,
        outcome: str,
        detail: str = "",
        *,
        actor: str | None = None,
        kind: str | None = None,
    ) -> AuditEntry:
        """Log one line (event ``audit``) and send its row to the store; the row.

        The caller does not wait for the row's commit (it joins the next group commit:
        an action's answer costs no extra fsync); :meth:`since` waits for every row sent
        before it. A store that fails then is logged (``audit_unstored``), never raised:
        the action itself stands."""
        entry = AuditEntry(
            at=self._clock(),
            actor=(actor or caller.name)[:255],
            actor_kind=kind or caller.kind,
            source=caller.source,
            action=action,
            target_kind=target_kind,
            target=target[:255],
            outcome=outcome,
            detail=detail[:MAX_DETAIL],
        )
        log_event(
            log,
            "audit",
            message=f"audit: {entry.actor} {action} {target_kind} {entry.target}: {outcome}",
            at=entry.at,
            actor=entry.actor,
            actor_kind=entry.actor_kind,
            source=entry.source,
            action=action,
            target_kind=target_kind,
            target=entry.target,
            outcome=outcome,
            detail=entry.detail,
            correlation_id=caller.correlation_id,
        )
        task = asyncio.create_task(self._store(entry), name="audit:row")
        self._writing.add(task)
        task.add_done_callback(self._writing.discard)
        return entry

    async def _store(self, entry: AuditEntry) -> None:
        try:
            await self.log.record(entry)
        except errors.StoreError as exc:  # the action stands; its log line tells it
            log_event(
                log,
                "audit_unstored",
                message="audit row not stored",
                level=logging.ERROR,
                error=str(exc),
            )

    async def flush(self) -> None:
        """Wait until every row recorded so far is stored (or its failure logged)."""
        if self._writing:  # those sent after this began need not be waited for
            await asyncio.gather(*list(self._writing), return_exceptions=True)

    async def sweep(self, before: float) -> int:
        """Delete the rows older than ``before`` (the housekeeping); how many."""
        return await self.log.sweep(before)

    async def since(
        self,
        at: float | None,
        *,
        limit: int,
        actor: str | None = None,
        action: str | None = None,
        target: str | None = None,
    ) -> list[AuditEntry]:
        """Rows at or after ``at`` (None: any time) matching every filter given, newest first."""
        await self.flush()  # a reader sees every action answered before it asked
        return await self.log.since(at, limit=limit, actor=actor, action=action, target=target)

    @asynccontextmanager
    async def action(
        self, caller: Caller, action: str, target_kind: str, target: str
    ) -> AsyncIterator[Note]:
        """Record the action run inside once it is decided: done, or the error's outcome
        (the error goes on). An error that is not ours (a bug) is not recorded."""
        note = Note()
        try:
            yield note
        except errors.EdgeprintError as exc:
            await self._note(caller, action, target_kind, target, note, outcome_of(exc))
            raise
        await self._note(caller, action, target_kind, target, note, "done")

    async def _note(
        self, caller: Caller, action: str, target_kind: str, target: str, note: Note, outcome: str
    ) -> None:
        await self.record(
            caller,
            action,
            target_kind,
            note.target or target,
            outcome,
            note.detail,
            actor=note.actor,
            kind=note.kind,
        )
