"""Release where you stand (issue 24): owners' codes and cards, and a person's HELD jobs
released at the printer or pool they stand at.

A credential is a release code or a card (one namespace: whatever is typed or read is
looked up as either) or a job's PIN. Codes and cards are stored only as a keyed
lookup digest (HMAC-SHA256 under a random per-store key, so a credential alone finds
its one row without trying every owner's scrypt) and a salted scrypt hash: no route
returns them and no log line holds them. Beside its key, a digest gives its value away
to whoever tries them all (a 6-digit code: 10^6 HMACs, about a second), so with SQLite
the key is kept outside the database (edgeprint.service.release_key: a 0600 file in
data_dir) and a copy of the database alone gives nothing away; with PostgreSQL it is in
the shared database, and a copy of that database does (DESIGN §"Release where you
stand"). Every try is counted per client
address *before* the slow check (``[release] max_pin_failures``, ``pin_lockout_s``,
the PIN settings), so parallel guesses cannot outrun the lock; a right one gives back
only its own count (so a person's own valid code does not wipe an attacker's wrong
guesses), and the count ages out ``pin_lockout_s`` after the last wrong try. A wrong
credential is one fixed error whether or not such an owner exists. Releases go through
:meth:`Front.release` one job at a time, so exactly-once, PIN rules, admission
and failover stay what they are.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import hmac
import logging
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

from edgeprint import errors, pins
from edgeprint.logs import log_event
from edgeprint.service import release_key
from edgeprint.service.jobs import JobService
from edgeprint.service.records import Caller, JobRecord
from edgeprint.states import JobState
from edgeprint.store.owners import Owners

log = logging.getLogger(__name__)

_JOB_ID_RE = re.compile(r"^[0-9a-f]{32}$")
#: A job number typed at the page: the id's first hex characters (the page shows 6).
_JOB_PREFIX_RE = re.compile(r"^[0-9a-f]{6,32}$")
#: States of a job that a release already sent on (a double tap's second answer).
_SENT = frozenset({JobState.RELEASED.value, JobState.PRINTING.value, JobState.DONE.value})
#: Most HELD jobs one person is shown (and "print all" releases) at once.
MAX_JOBS = 100


@functools.cache
def _decoy_hash() -> str:
    """A hash no credential matches: checked when there is nothing to check, so a wrong
    code costs the same time whether or not such an owner exists."""
    return pins.hash_pin(os.urandom(8).hex())


@dataclass(frozen=True)
class Presented:
    """What a person typed or a reader sent: a code or card (``value``), or a job's PIN."""

    value: str | None = None
    pin: str | None = None
    job: str | None = None


@dataclass(frozen=True)
class Person:
    """Who a credential opened: an owner (code or card), or one job (its PIN)."""

    owner: str
    #: The one job a PIN opens (None: all of the owner's HELD jobs).
    job_id: str | None = None
    pin: str | None = None

    def owns(self, job: JobRecord) -> bool:
        return job.id == self.job_id if self.job_id is not None else job.owner == self.owner


@dataclass(frozen=True)
class PlacePrinter:
    name: str
    waiting: int
    ready: bool


@dataclass(frozen=True)
class Place:
    """A release page's printer or pool: its printers, and the least loaded ready one."""

    name: str
    pool: bool
    printers: tuple[PlacePrinter, ...]
    suggested: str | None


@dataclass(frozen=True)
class Outcome:
    """What became of one job of a release: ``released`` (to ``where``), ``conflict`` (it
    was ``state``), ``not-found``, ``pin-required``, ``locked``, ``queue-full``,
    ``refused`` (``detail`` says why). A released job's ``printer`` is the one it went to
    (None while its ``pool`` has not chosen one yet)."""

    job: str
    outcome: str
    state: str | None = None
    printer: str | None = None
    pool: str | None = None
    detail: str | None = None


class ReleaseDesk:
    """Owners' credentials and releases at a place, over one :class:`JobService`."""

    def __init__(self, service: JobService) -> None:
        self.service = service
        self._owners: Owners | None = None
        self._key: bytes | None = None
        self._key_lock = asyncio.Lock()

    @property
    def owners(self) -> Owners:
        """The credentials' queries (made at first use: the app is built before it serves)."""
        if self._owners is None:
            self._owners = Owners(self.service.jobs.store)
        return self._owners

    # --- credentials -------------------------------------------------------------------

    async def _lookup(self, value: str) -> str:
        if self._key is None:
            async with self._key_lock:
                if self._key is None:
                    self._key = bytes.fromhex(await self._lookup_key())
        return hmac.new(
            self._key, value.encode("utf-8", "surrogateescape"), hashlib.sha256
        ).hexdigest()

    async def _lookup_key(self) -> str:
        """SQLite: the key file in data_dir (a copy of the database alone holds no key);
        PostgreSQL: the shared database's row, the same for every appliance."""
        if self.service.jobs.store.dialect == "sqlite":
            path = self.service.config.server.data_dir / release_key.KEY_FILE
            return await release_key.file_key(self.owners, path)
        return await self.owners.lookup_key(os.urandom(32).hex(), now=self.service.clock())

    async def set_credentials(
        self, owner: str, values: dict[str, str], caller: Caller
    ) -> list[str]:
        """Set ``owner``'s ``code`` and/or ``card`` (a kind not given is kept); which kinds
        it has now. Raises errors.CredentialTaken (another owner, or this owner's other
        kind, holds the value: nothing changed), errors.StoreError."""
        lookups = {kind: await self._lookup(v) for kind, v in values.items()}
        if await self.owners.held_by_others(owner, lookups):
            raise errors.CredentialTaken()
        creds = {k: (lookups[k], await pins.hash_pin_async(v)) for k, v in values.items()}
        try:
            await self.owners.put(owner, creds, now=self.service.clock(), actor=caller.name)
        except errors.StoreError:
            # the unique lookup, taken meanwhile by a concurrent PUT: nothing of it stored
            if await self.owners.held_by_others(owner, lookups):
                raise errors.CredentialTaken() from None
            raise
        log_event(
            log,
            "owner_credentials_set",
            message="release credentials set",
            owner=owner,
            kinds=sorted(values),
            token=caller.name,
            correlation_id=caller.correlation_id,
        )
        return await self.owners.kinds(owner)

    async def remove_credentials(self, owner: str, caller: Caller) -> None:
        """Forget ``owner``'s code and card; errors.OwnerNotFound when there were none."""
        if not await self.owners.remove(owner):
            raise errors.OwnerNotFound(owner)
        log_event(
            log,
            "owner_credentials_removed",
            message="release credentials removed",
            owner=owner,
            token=caller.name,
            correlation_id=caller.correlation_id,
        )

    async def identify(self, presented: Presented, address: str, caller: Caller) -> Person:
        """Who ``presented`` opens, tried from ``address``.

        The try is counted for the address first, as wrong (errors.AddressLocked when
        it is locked); a wrong credential raises errors.CredentialInvalid, the same
        whatever was wrong; a right one gives back only its own count (and lifts the
        lock only if this try set it), never the wrong tries before it. A PIN also
        counts towards its job's own lock (errors.ReleaseLocked).
        """
        cfg = self.service.config.release
        now = self.service.run()  # a lockout is a duration: the run clock (issue 27)
        taken = await self.owners.take_attempt(
            address, now=now, max_failures=cfg.max_pin_failures, lockout_s=cfg.pin_lockout_s
        )
        if taken is None:
            until = await self.owners.locked_until(address) or now
            raise errors.AddressLocked(max(1, math.ceil(until - now)))
        if presented.pin is not None and presented.job is not None:
            person = await self._by_pin(presented.pin, presented.job, caller)
        else:
            person = await self._by_value((presented.value or "").strip())
        if person is None:
            attempts, locked_until = taken
            log_event(
                log,
                "release_credential_mismatch",
                level=logging.WARNING,
                address=address,
                attempts=attempts,
                locked=locked_until is not None,
                token=caller.name,
                correlation_id=caller.correlation_id,
            )
            raise errors.CredentialInvalid()
        await self.owners.give_back(address, taken[1])
        return person

    async def _by_value(self, value: str) -> Person | None:
        found = await self.owners.find(await self._lookup(value)) if value else None
        if found is None:
            await pins.verify_pin_async(value or "0", await asyncio.to_thread(_decoy_hash))
            return None
        if await pins.verify_pin_async(value, found.hash):
            return Person(found.owner)
        return None

    async def _job_for_pin(self, typed: str) -> JobRecord | None:
        """The job a typed job number names: a full id (in any state), or the first 6+ hex
        characters of exactly one HELD job's id (case does not matter); else None."""
        ref = typed.strip().lower()
        if _JOB_ID_RE.match(ref):
            return await self.service.jobs.get(ref)
        if not _JOB_PREFIX_RE.match(ref):
            return None
        found = await self.service.jobs.list_jobs(state=JobState.HELD, id_prefix=ref, limit=2)
        return found[0] if len(found) == 1 else None

    async def _by_pin(self, pin: str, job_ref: str, caller: Caller) -> Person | None:
        job = await self._job_for_pin(job_ref)
        if job is None or job.release_pin_hash is None:
            await pins.verify_pin_async(pin, await asyncio.to_thread(_decoy_hash))
            return None
        if job.state is JobState.HELD:
            try:
                moved_on = await self.service.front.check_pin(job, pin, caller)
            except (errors.PinMismatch, errors.PinRequired):
                return None
            if moved_on is None:
                # a right PIN: looking again does not wear the job's lock down
                await self.service.jobs.clear_pin_attempts(job.id)
                return Person(job.owner, job.id, pin)
        # no longer HELD: the PIN still says who it is (and that nothing waits)
        if await pins.verify_pin_async(pin, job.release_pin_hash):
            return Person(job.owner, job.id, pin)
        return None

    # --- the place and the person's jobs ------------------------------------------------

    async def place(self, name: str) -> Place:
        """The printer or pool called ``name``; errors.PrinterNotFound."""
        config = self.service.config
        if config.printer(name) is not None:
            members: Sequence[str] = (name,)
            pool = False
        elif name in config.pools:
            members, pool = config.pools[name], True
        else:
            raise errors.PrinterNotFound(name)
        depths = (await self.service.views.queues()).waiting
        usable = self.service.admission.usable
        printers = tuple(PlacePrinter(p, depths.get((p, None), 0), usable(p)) for p in members)
        ready = [p for p in printers if p.ready]
        suggested = min(ready, key=lambda p: p.waiting).name if ready else None
        return Place(name, pool, printers, suggested)

    async def held(self, person: Person) -> list[JobRecord]:
        """The person's HELD jobs, newest first (a PIN: its one job, if HELD)."""
        if person.job_id is not None:
            job = await self.service.jobs.get(person.job_id)
            return [job] if job is not None and job.state is JobState.HELD else []
        return await self.service.jobs.list_jobs(
            state=JobState.HELD, owner=person.owner, limit=MAX_JOBS
        )

    async def release(
        self,
        person: Person,
        place: Place,
        job_ids: Sequence[str] | None,
        caller: Caller,
        *,
        printer: str | None = None,
    ) -> list[Outcome]:
        """Release the person's ``job_ids`` (None: all their HELD jobs) at ``place`` (a
        pool's page: to ``printer`` of it, else to the pool). A job that is not theirs
        is ``not-found``, whoever's it is. Raises errors.InvalidRequest (``printer``
        not of this place), errors.StoreError."""
        if printer is not None and printer not in {p.name for p in place.printers}:
            raise errors.InvalidRequest(
                f"{printer!r} is not a printer of {place.name!r}",
                [errors.FieldProblem("body.printer", "not a printer of this page")],
            )
        if place.pool:
            target_printer, target_pool = printer, (None if printer else place.name)
        else:
            target_printer, target_pool = place.name, None
        held = {j.id: j for j in await self.held(person)}
        wanted = list(held) if job_ids is None else list(dict.fromkeys(job_ids))
        out: list[Outcome] = []
        for job_id in wanted:
            if job_id not in held:
                job = await self.service.jobs.get(job_id) if _JOB_ID_RE.match(job_id) else None
                if job is not None and person.owns(job):
                    out.append(Outcome(job_id, "conflict", state=job.state.value))
                else:
                    out.append(Outcome(job_id, "not-found"))
                continue
            out.append(
                await self._release_one(
                    job_id,
                    caller,
                    target_printer,
                    target_pool,
                    person.pin,
                    place.name if place.pool else None,
                )
            )
        return out

    async def _release_one(
        self,
        job_id: str,
        caller: Caller,
        printer: str | None,
        pool: str | None,
        pin: str | None,
        place_pool: str | None,
    ) -> Outcome:
        try:
            job = await self.service.front.release(
                job_id, caller, printer=printer, pool=pool, pin=pin
            )
        except errors.StateConflict as exc:
            return Outcome(job_id, "conflict", state=exc.state)
        except errors.JobNotFound:
            return Outcome(job_id, "not-found")
        except (errors.PinRequired, errors.PinMismatch):
            return Outcome(job_id, "pin-required", detail="this job has its own PIN")
        except errors.ReleaseLocked as exc:
            return Outcome(job_id, "locked", detail=str(exc))
        except errors.Backpressure as exc:
            # for the person at the page: where, and when to try again (the API's wording
            # speaks of an Idempotency-Key, which a release never has)
            where = exc.target.split(" ", 1)[-1]
            why = f"{where} is full, try again in {exc.retry_after_s} s"
            return Outcome(job_id, "queue-full", detail=why)
        except (errors.InvalidRequest, errors.DocumentUnprintable) as exc:
            return Outcome(job_id, "refused", detail=str(exc))
        return Outcome(
            job_id,
            "released",
            state=job.state.value,
            printer=job.printer,
            pool=job.pool or place_pool,
        )


def _jobs(n: int) -> str:
    return f"{n} job" if n == 1 else f"{n} jobs"


def summary(outcomes: Sequence[Outcome]) -> str:
    """The page's sentence: ``2 jobs sent to printer-02``, and what did not go (a double
    tap's second answer: ``Already sent: 1 job``)."""
    if not outcomes:
        return "Nothing is waiting for you"
    sent: dict[str, int] = {}
    for o in outcomes:
        if o.outcome == "released":
            where = o.printer or o.pool or "?"
            sent[where] = sent.get(where, 0) + 1
    parts = [f"{_jobs(n)} sent to {where}" for where, n in sent.items()]
    already = sum(o.outcome == "conflict" and o.state in _SENT for o in outcomes)
    if already:
        parts.append(f"already sent: {_jobs(already)}")
    gone = sum(o.outcome in ("conflict", "not-found") for o in outcomes) - already
    if gone:
        parts.append(f"{_jobs(gone)} not waiting any more")
    pinned = sum(o.outcome == "pin-required" for o in outcomes)
    if pinned:
        has = "has its own PIN" if pinned == 1 else "have their own PINs"
        parts.append(f"{_jobs(pinned)} {has}: choose \u201cI have a job PIN\u201d")
    full = [o for o in outcomes if o.outcome == "queue-full"]
    if full:
        parts.append(f"{_jobs(len(full))} still waiting: {full[0].detail}")
    held_back = len(outcomes) - sum(sent.values()) - already - gone - pinned - len(full)
    if held_back:
        parts.append(f"{_jobs(held_back)} could not be sent now")
    text = "; ".join(parts)
    return text[:1].upper() + text[1:]
