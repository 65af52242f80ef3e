"""Owners' release credentials and wrong tries per client address (issue 24).

``owner_credentials`` holds a code and/or a card per owner, each only as a keyed
lookup digest (unique: one namespace across owners and kinds) and a salted
scrypt hash; the service computes both (edgeprint.service.release_desk). The
lookup key is one random key per store, made on first use: in ``release_key`` with
PostgreSQL (every appliance shares it), in a file outside the database with SQLite
(edgeprint.service.release_key, which adopts and deletes a key stored here before).
``release_attempts`` counts tries per client address before they are checked,
as ``jobs.pin_failures`` does per job; a right try gives back only its own count,
and the count ages out ``pin_lockout_s`` after the last wrong try.
"""

from __future__ import annotations

from dataclasses import dataclass

from edgeprint.store.interface import Store

#: Parameters: address, first-try lock (until or NULL), now, stale_before (twice),
#: max_failures, until, now, now. A count whose lock has ended, or whose last wrong try
#: is older than the lockout, starts afresh. Every SET expression is evaluated on the
#: old row (SQLite and PostgreSQL alike).
_TAKE_ATTEMPT = """
INSERT INTO release_attempts (address, failures, locked_until, last_failure_at)
VALUES (?, 1, ?, ?)
ON CONFLICT (address) DO UPDATE SET
    failures = CASE WHEN release_attempts.locked_until IS NOT NULL
                      OR release_attempts.last_failure_at <= ? THEN 1
                    ELSE release_attempts.failures + 1 END,
    locked_until = CASE
        WHEN (CASE WHEN release_attempts.locked_until IS NOT NULL
                     OR release_attempts.last_failure_at <= ? THEN 1
                   ELSE release_attempts.failures + 1 END) >= ?
        THEN ? ELSE NULL END,
    previous_failure_at = release_attempts.last_failure_at,
    last_failure_at = ?
WHERE release_attempts.locked_until IS NULL OR release_attempts.locked_until <= ?
RETURNING failures, locked_until
"""

#: A right try gives back its own count and its time (so right tries do not keep old
#: wrong ones from ageing out), and lifts the lock only if that try set it (parameters:
#: locked_until it set or NULL, which equals nothing, address).
_GIVE_BACK = """
UPDATE release_attempts SET
    failures = CASE WHEN failures > 0 THEN failures - 1 ELSE 0 END,
    last_failure_at = previous_failure_at,
    locked_until = CASE WHEN locked_until = ? THEN NULL ELSE locked_until END
WHERE address = ?
"""


@dataclass(frozen=True)
class Credential:
    """One stored credential: whose, which kind, and its scrypt hash."""

    owner: str
    kind: str
    hash: str


class Owners:
    """Queries on ``owner_credentials``, ``release_key`` and ``release_attempts``."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def lookup_key(self, new_key: str, *, now: float) -> str:
        """The store's lookup key (hex); ``new_key`` becomes it if there is none yet (the
        first writer wins; every appliance of a shared store reads the same one)."""
        rows = await self._store.read("SELECT key FROM release_key WHERE id = 1")
        if rows:
            return str(rows[0][0])
        await self._store.write(
            "INSERT INTO release_key (id, key, created_at) VALUES (1, ?, ?) "
            "ON CONFLICT (id) DO NOTHING",
            (new_key, now),
        )
        rows = await self._store.read("SELECT key FROM release_key WHERE id = 1")
        return str(rows[0][0])

    async def stored_key(self) -> str | None:
        """The lookup key held in the database (hex), if any."""
        rows = await self._store.read("SELECT key FROM release_key WHERE id = 1")
        return str(rows[0][0]) if rows else None

    async def forget_stored_key(self) -> None:
        """Delete the database's copy of the lookup key (it is kept elsewhere now)."""
        await self._store.write("DELETE FROM release_key WHERE id = 1")

    async def any_credentials(self) -> bool:
        """Whether any owner has a code or card."""
        return bool(await self._store.read("SELECT 1 FROM owner_credentials LIMIT 1"))

    async def find(self, lookup: str) -> Credential | None:
        """The credential with this lookup digest, or None."""
        rows = await self._store.read(
            "SELECT owner, kind, hash FROM owner_credentials WHERE lookup = ?", (lookup,)
        )
        return Credential(str(rows[0][0]), str(rows[0][1]), str(rows[0][2])) if rows else None

    async def held_by_others(self, owner: str, lookups: dict[str, str]) -> bool:
        """True when any of ``lookups`` (kind → digest) is held by another owner, or by this
        owner's credential of the other kind (one namespace)."""
        for kind, lookup in lookups.items():
            rows = await self._store.read(
                "SELECT 1 FROM owner_credentials WHERE lookup = ? AND NOT (owner = ? AND kind = ?)",
                (lookup, owner, kind),
            )
            if rows:
                return True
        return False

    async def kinds(self, owner: str) -> list[str]:
        """Which credentials ``owner`` has (``code``, ``card``)."""
        rows = await self._store.read(
            "SELECT kind FROM owner_credentials WHERE owner = ? ORDER BY kind", (owner,)
        )
        return [str(r[0]) for r in rows]

    async def put(
        self, owner: str, creds: dict[str, tuple[str, str]], *, now: float, actor: str
    ) -> None:
        """Set ``owner``'s credentials (kind → (lookup, scrypt hash)) all or none; a kind not
        given is kept. Raises errors.StoreError, also when the unique lookup is taken
        meanwhile (the caller tells the two apart)."""
        await self._store.write_many(
            [
                (
                    "INSERT INTO owner_credentials (owner, kind, lookup, hash, actor, updated_at) "
                    "VALUES (?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT (owner, kind) DO UPDATE SET lookup = excluded.lookup, "
                    "hash = excluded.hash, actor = excluded.actor, "
                    "updated_at = excluded.updated_at",
                    (owner, kind, lookup, hashed, actor, now),
                )
                for kind, (lookup, hashed) in sorted(creds.items())
            ]
        )

    async def remove(self, owner: str) -> int:
        """Forget ``owner``'s credentials; how many there were."""
        rows = await self._store.write(
            "DELETE FROM owner_credentials WHERE owner = ? RETURNING kind", (owner,)
        )
        return len(rows)

    async def take_attempt(
        self, address: str, *, now: float, max_failures: int, lockout_s: float
    ) -> tuple[int, float | None] | None:
        """Count one try from ``address`` as wrong before it is checked; (tries so far,
        locked until), or None when the address is locked now. The ``max_failures``-th
        try locks it at once; a count whose last wrong try is ``lockout_s`` old starts
        afresh. A right try gives back only itself: :meth:`give_back`."""
        until = now + lockout_s
        first = until if max_failures <= 1 else None
        stale = now - lockout_s
        rows = await self._store.write(
            _TAKE_ATTEMPT, (address, first, now, stale, stale, max_failures, until, now, now)
        )
        if not rows:
            return None
        locked = rows[0][1]
        return int(rows[0][0]), None if locked is None else float(locked)

    async def locked_until(self, address: str) -> float | None:
        rows = await self._store.read(
            "SELECT locked_until FROM release_attempts WHERE address = ?", (address,)
        )
        return None if not rows or rows[0][0] is None else float(rows[0][0])

    async def failures(self, address: str) -> int:
        """The wrong tries counted for ``address`` now (0 when none)."""
        rows = await self._store.read(
            "SELECT failures FROM release_attempts WHERE address = ?", (address,)
        )
        return int(rows[0][0]) if rows else 0

    async def give_back(self, address: str, locked_by_it: float | None) -> None:
        """A right try from ``address``: its own count is taken back (never the wrong tries
        before it), and the lock lifted only when this very try set it (``locked_by_it``,
        the ``locked_until`` :meth:`take_attempt` answered)."""
        await self._store.write(_GIVE_BACK, (locked_by_it, address))
