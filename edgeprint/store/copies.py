"""Copy rows: every SQL statement on ``copies`` (DESIGN §3).

Each change of a copy's state is one conditional ``UPDATE … WHERE id = ? AND
state IN (…) RETURNING *``, the allowed states and the new one coming from
:data:`edgeprint.copies.COPY_TRANSITIONS`. ``None`` means the copy was not in
a state that allows the action (someone else changed it first).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from edgeprint.copies import (
    ORIGIN_EDGEPRINT,
    ORIGIN_REQUESTED,
    SETTLE,
    Copy,
    CopyAction,
    CopyState,
    copy_sources,
    copy_targets,
)
from edgeprint.states import Action
from edgeprint.store.copy_reads import CopyReads, copy_from_row
from edgeprint.store.guards import (
    CANCELLING,
    LEASED_COPY,
    LEASED_JOB,
    LIVE_COPIES,
    ON_PRINTER,
    UNREQUESTED,
    fenced,
    in_list,
)
from edgeprint.store.interface import Params, Store
from edgeprint.store.leases import Fence

_LIVE_SQL = in_list(LIVE_COPIES)
#: A job with a copy the printer said completed whole gets no other copy (exactly once:
#: a copy left on a printer the job moved from may turn out printed after the move).
_NONE_PRINTED = (
    "NOT EXISTS (SELECT 1 FROM copies p WHERE p.job_id = jobs.id "
    f"AND p.state = '{CopyState.PRINTED.value}')"
)
_ON_PRINTER = in_list(ON_PRINTER)

#: Columns a transition may set besides the state bookkeeping.
_SETTABLE = frozenset(
    {
        "printer_job_id",
        "created_s",
        "sent_at",
        "acknowledged_at",
        "cancel_origin",
        "cancel_sent_at",
        "job_state",
        "job_state_reasons",
        "k_octets",
        "impressions_completed",
        "outcome",
        "settled_at",
        "settled_by",
        "job_uuid",
        "created_dt",
        "written_at",
        "sheets_completed",
    }
)


class Figures(Protocol):
    """What a printer said of one of its jobs (``printers.ipp.PrinterJob`` is one)."""

    @property
    def job_id(self) -> int: ...
    @property
    def state(self) -> int: ...
    @property
    def reasons(self) -> tuple[str, ...]: ...
    @property
    def k_octets(self) -> int | None: ...
    @property
    def created_s(self) -> int | None: ...
    @property
    def impressions_completed(self) -> int | None: ...
    @property
    def sheets_completed(self) -> int | None: ...
    @property
    def uuid(self) -> str | None: ...
    @property
    def created_dt(self) -> str | None: ...


def _figures(pj: Figures | None, outcome: str) -> dict[str, object]:
    """The columns a printer's figures of a copy set (none but ``outcome`` without any)."""
    sets: dict[str, object] = {"outcome": outcome}
    if pj is not None:
        sets.update(
            job_state=pj.state,
            job_state_reasons=",".join(pj.reasons),
            k_octets=pj.k_octets,
            impressions_completed=pj.impressions_completed,
            sheets_completed=pj.sheets_completed,
        )
    return sets


def transition_sql(action: CopyAction, sets: Mapping[str, Any]) -> str:
    """The conditional UPDATE for ``action`` on one copy (``?`` for its id comes last)."""
    bad = set(sets) - _SETTABLE
    if bad:
        raise ValueError(f"a copy transition cannot set {sorted(bad)}")
    targets = copy_targets(action)
    cases = " ".join(f"WHEN '{src.value}' THEN '{dst.value}'" for src, dst in targets.items())
    assignments = [f"state = CASE state {cases} END", "updated_at = ?", "actor = ?"]
    for col in sets:
        if col == "cancel_origin":  # a person's cancel is never downgraded to edgeprint's own
            assignments.append(
                f"cancel_origin = CASE WHEN cancel_origin = '{ORIGIN_REQUESTED}' "
                "THEN cancel_origin ELSE ? END"
            )
        else:
            assignments.append(f"{col} = ?")
    marks = ", ".join(f"'{s.value}'" for s in copy_sources(action))
    return (
        f"UPDATE copies SET {', '.join(assignments)} WHERE id = ? AND state IN ({marks}) "
        "RETURNING *"
    )


class Copies(CopyReads):
    """Queries on the ``copies`` table of one :class:`Store`."""

    def __init__(self, store: Store, *, fence: Fence | None = None) -> None:
        super().__init__(store)
        #: With printer leases: every write of a printer's worker carries its lease's epoch.
        self.fence = fence

    def _fenced(
        self, stmt: tuple[str, Params], printer: str, guard: str = LEASED_COPY
    ) -> tuple[str, Params]:
        """``stmt`` guarded by ``printer``'s lease (unchanged without leases)."""
        if self.fence is None:
            return stmt
        sql, params = stmt
        return fenced(sql, guard), (*params, *self.fence.params(printer))

    def open_sql(
        self,
        *,
        job_id: str,
        claim: int,
        printer: str,
        state: CopyState,
        operation: str,
        document_format: str,
        document_bytes: int,
        impressions_expected: int | None,
        printer_up_s: int | None,
        epoch: int | None,
        now: float,
    ) -> tuple[str, Params]:
        """INSERT of a new copy, only while the job is PRINTING on ``printer`` in ``claim``.

        A job whose claim already has a live copy gets none (one copy per claim at
        a time), and nor does a job cancelled or moved meanwhile, or one with a copy
        already printed.
        """
        sent_at = now if state is CopyState.SENDING else None
        sql = f"""
        INSERT INTO copies (job_id, claim, printer, state, operation, document_format,
                            document_bytes, impressions_expected, printer_up_s, epoch, sent_at,
                            actor, created_at, updated_at)
        SELECT id, claims, printed_on, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?
        FROM jobs
        WHERE id = ? AND state IN ({_ON_PRINTER}) AND printed_on = ? AND claims = ?
          AND NOT EXISTS (SELECT 1 FROM copies c WHERE c.job_id = jobs.id
                          AND c.claim = jobs.claims AND c.state IN ({_LIVE_SQL}))
          AND {_NONE_PRINTED}
        RETURNING *
        """
        params = (
            state.value,
            operation,
            document_format,
            document_bytes,
            impressions_expected,
            printer_up_s,
            epoch,
            sent_at,
            f"printer:{printer}",
            now,
            now,
            job_id,
            printer,
            claim,
        )
        return self._fenced((sql, params), printer, LEASED_JOB)

    def open_claimed_sql(
        self,
        *,
        printer: str,
        state: CopyState,
        operation: str,
        document_format: str,
        printer_up_s: int | None,
        epoch: int | None,
        now: float,
    ) -> tuple[str, Params]:
        """INSERT of the copy of the job ``printer`` claimed at ``now`` in the same transaction.

        Runs right after the claim statement (one unit): the claimed job is the
        one PRINTING on ``printer`` whose claim was stamped ``now`` and has no
        live copy.
        """
        sent_at = now if state is CopyState.SENDING else None
        sql = f"""
        INSERT INTO copies (job_id, claim, printer, state, operation, document_format,
                            document_bytes, impressions_expected, printer_up_s, epoch, sent_at,
                            actor, created_at, updated_at)
        SELECT id, claims, printed_on, ?, ?, ?, document_bytes,
               CASE WHEN document_pages IS NULL THEN NULL
                    WHEN from_page IS NULL THEN document_pages * copies
                    ELSE (document_pages - from_page + 1) * copies END,
               ?, ?, ?, ?, ?, ?
        FROM jobs
        WHERE state IN ({_ON_PRINTER}) AND printed_on = ? AND claimed_at = ?
          AND reason = '{Action.CLAIM.value}'
          AND NOT EXISTS (SELECT 1 FROM copies c WHERE c.job_id = jobs.id
                          AND c.claim = jobs.claims AND c.state IN ({_LIVE_SQL}))
          AND {_NONE_PRINTED}
        RETURNING *
        """
        params = (
            state.value,
            operation,
            document_format,
            printer_up_s,
            epoch,
            sent_at,
            f"printer:{printer}",
            now,
            now,
            printer,
            now,
        )
        return self._fenced((sql, params), printer, LEASED_JOB)

    async def open(self, **kw: Any) -> Copy | None:
        """Store a new copy (see :meth:`open_sql`); None when the job is no longer ours."""
        rows = await self._store.write(*self.open_sql(**kw))
        return copy_from_row(rows[0]) if rows else None

    def change_sql(
        self,
        copy_id: int,
        action: CopyAction,
        *,
        now: float,
        actor: str,
        sets: Mapping[str, Any],
        printer: str | None = None,
    ) -> tuple[str, Params]:
        """The conditional UPDATE applying ``action`` to one copy (of ``printer``: fenced by
        its lease when leases are on)."""
        stmt = transition_sql(action, sets), (now, actor, *sets.values(), copy_id)
        return stmt if printer is None else self._fenced(stmt, printer)

    async def change(
        self,
        copy_id: int,
        action: CopyAction,
        *,
        now: float,
        actor: str,
        sets: Mapping[str, Any] | None = None,
        printer: str | None = None,
    ) -> Copy | None:
        """Apply ``action`` if the copy's state allows it; None if it does not."""
        rows = await self._store.write(
            *self.change_sql(
                copy_id, action, now=now, actor=actor, sets=sets or {}, printer=printer
            )
        )
        return copy_from_row(rows[0]) if rows else None

    def request_cancel_sql(self, job_id: str, *, now: float, actor: str) -> tuple[str, Params]:
        """Mark the live copies of a PRINTING job's current claim as cancelled by a person."""
        sql = f"""
        UPDATE copies SET state = '{CANCELLING.value}', cancel_origin = ?, updated_at = ?,
                          actor = ?
        WHERE job_id = ? AND state IN ({_LIVE_SQL})
          AND claim = (SELECT claims FROM jobs WHERE id = ? AND state IN ({_ON_PRINTER}))
        RETURNING *
        """
        return sql, (ORIGIN_REQUESTED, now, actor, job_id, job_id)

    async def request_cancel(self, job_id: str, *, now: float, actor: str) -> list[Copy]:
        """The copies now marked for Cancel-Job on a person's behalf (none: no live copy)."""
        rows = await self._store.write(*self.request_cancel_sql(job_id, now=now, actor=actor))
        return [copy_from_row(r) for r in rows]

    async def report(self, copy: Copy, pj: Figures, *, now: float) -> Copy | None:
        """Record what the printer reports of a live copy (no state change); None if settled.

        ``time-at-creation``, ``job-uuid`` and ``date-time-at-creation`` are kept once
        learnt: they are the copy's identity.
        """
        sql = (
            "UPDATE copies SET created_s = COALESCE(created_s, ?), "
            "job_uuid = COALESCE(job_uuid, ?), created_dt = COALESCE(created_dt, ?), "
            "job_state = ?, job_state_reasons = ?, k_octets = ?, impressions_completed = ?, "
            "sheets_completed = ?, updated_at = ? "
            f"WHERE id = ? AND state IN ({_LIVE_SQL}) RETURNING *"
        )
        figures = _figures(pj, "")
        figures.pop("outcome")
        params = (pj.created_s, pj.uuid, pj.created_dt, *figures.values(), now, copy.id)
        rows = await self._store.write(*self._fenced((sql, params), copy.printer))
        return copy_from_row(rows[0]) if rows else None

    # --- one method per copy transition (copies.COPY_TRANSITIONS), by the copy's printer ---

    async def _change(self, copy: Copy, action: CopyAction, now: float, **sets: Any) -> Copy | None:
        return await self.change(
            copy.id,
            action,
            now=now,
            actor=f"printer:{copy.printer}",
            sets=sets,
            printer=copy.printer,
        )

    async def found(self, copy: Copy, pj: Figures, *, now: float) -> Copy | None:
        """The printer job of a copy whose job-id was never stored has been found."""
        return await self._change(
            copy,
            CopyAction.CREATED,
            now,
            printer_job_id=pj.job_id,
            created_s=pj.created_s,
            job_uuid=pj.uuid,
            created_dt=pj.created_dt,
        )

    async def created(
        self, copy: Copy, printer_job_id: int, job_uuid: str | None, *, now: float
    ) -> Copy | None:
        """Create-Job made the printer job (the document goes later)."""
        return await self._change(
            copy, CopyAction.CREATED, now, printer_job_id=printer_job_id, job_uuid=job_uuid
        )

    async def sending(
        self, copy: Copy, printer_job_id: int, job_uuid: str | None, *, now: float
    ) -> Copy | None:
        """Create-Job made the printer job and the upload starts now."""
        return await self._change(
            copy,
            CopyAction.SEND,
            now,
            printer_job_id=printer_job_id,
            job_uuid=job_uuid,
            sent_at=now,
        )

    async def written(self, copy: Copy, *, now: float) -> Copy | None:
        """Every byte of the upload was handed to the connection."""
        return await self._change(copy, CopyAction.SEND, now, written_at=now)

    async def unsent(self, copy: Copy, *, now: float) -> Copy | None:
        """Not one byte of the upload left."""
        return await self._change(copy, CopyAction.UNSEND, now, sent_at=None)

    async def acknowledge(
        self,
        copy: Copy,
        *,
        now: float,
        printer_job_id: int | None = None,
        job_uuid: str | None = None,
    ) -> Copy | None:
        """The printer has the whole document (with its job-id when the answer gave one)."""
        if printer_job_id is None:
            return await self._change(copy, CopyAction.ACKNOWLEDGE, now, acknowledged_at=now)
        return await self._change(
            copy,
            CopyAction.ACKNOWLEDGE,
            now,
            acknowledged_at=now,
            printer_job_id=printer_job_id,
            job_uuid=job_uuid,
        )

    async def cancelling(self, copy: Copy, *, now: float) -> Copy | None:
        """edgeprint will Cancel-Job this copy (recorded before the request is sent)."""
        return await self._change(copy, CopyAction.CANCEL, now, cancel_origin=ORIGIN_EDGEPRINT)

    async def cancel_sent(self, copy: Copy, *, now: float) -> Copy | None:
        """Cancel-Job for this copy was answered."""
        return await self._change(copy, CopyAction.CANCEL, now, cancel_sent_at=now)

    def settle_sql(
        self,
        copy: Copy,
        state: CopyState,
        outcome: str,
        pj: Figures | None,
        *,
        evidence: str | None,
        now: float,
    ) -> tuple[str, Params]:
        """The copy settles as ``state`` by ``evidence``, with the printer's last figures."""
        sets = {**_figures(pj, outcome), "settled_by": evidence, "settled_at": now}
        return self.change_sql(
            copy.id,
            SETTLE[state],
            now=now,
            actor=f"printer:{copy.printer}",
            sets=sets,
            printer=copy.printer,
        )

    async def settle(
        self,
        copy: Copy,
        state: CopyState,
        outcome: str,
        pj: Figures | None,
        *,
        evidence: str | None,
        now: float,
    ) -> Copy | None:
        """See :meth:`settle_sql`; None if it already was settled."""
        sql = self.settle_sql(copy, state, outcome, pj, evidence=evidence, now=now)
        rows = await self._store.write(*sql)
        return copy_from_row(rows[0]) if rows else None

    async def redescribe(
        self, copy_id: int, document_format: str, document_bytes: int, *, now: float
    ) -> Copy | None:
        """Change what a copy will carry while nothing of it was requested yet (``creating``)."""
        rows = await self._store.write(
            "UPDATE copies SET document_format = ?, document_bytes = ?, updated_at = ? "
            f"WHERE id = ? AND state IN ({in_list(UNREQUESTED)}) RETURNING *",
            (document_format, document_bytes, now, copy_id),
        )
        return copy_from_row(rows[0]) if rows else None
