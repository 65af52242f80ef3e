"""Bearer-token auth: tokens are configured as SHA-256 digests, compared in constant time.

A route names what it needs (:data:`Needed`); a token's role grants a set of those
(:data:`_GRANTS`). Expiry (``[[tokens]].expires``) is checked against the wall clock on
every request, and the last authenticated use of each token (when, from which address) is
kept in memory for ``GET /v1/tokens`` (issue 26).
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from edgeprint import errors
from edgeprint.api.refusals import RefusalLog
from edgeprint.config import TokenConfig

#: What a route (or a call) needs: "kiosk" (act as a kiosk), "tech", "station" (the release
#: pages' calls), "read" (read jobs, /metrics when it needs a token), "view" (the status
#: page's technician reads: printers, stats, the dead-letter queue, the event's mode).
Needed = Literal["kiosk", "tech", "station", "read", "view"]

#: Role → what it may do. A tech may do everything; a kiosk acts and reads jobs; a viewer
#: (issue 26) reads what the status page shows and acts on nothing. A station (issue 24) may
#: use only the release pages' calls (edgeprint.api.release checks its printers; no route
#: needs "station"); a kiosk or a tech token works there too.
_GRANTS: dict[str, frozenset[str]] = {
    "kiosk": frozenset({"kiosk", "station", "read"}),
    "tech": frozenset({"kiosk", "tech", "station", "read", "view"}),
    "station": frozenset({"station"}),
    "viewer": frozenset({"read", "view"}),
}


def grants(role: str, needed: str) -> bool:
    """True when a token of ``role`` may do what needs ``needed``."""
    return needed in _GRANTS[role]


def roles_for(needed: str) -> tuple[str, ...]:
    """The roles that may do what needs ``needed``, in name order."""
    return tuple(sorted(r for r, can in _GRANTS.items() if needed in can))


def token_digest(token: str) -> str:
    """Hex SHA-256 of a bearer token, as written in ``[[tokens]].sha256``."""
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class LastUse:
    """A token's last authenticated request: unix time and the client's address."""

    at: float
    source: str | None


class TokenAuth:
    """Checks ``Authorization: Bearer …`` against the configured token digests."""

    def __init__(self, tokens: list[TokenConfig], clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        #: When this process began counting uses (``GET /v1/tokens``'s ``since``).
        self.since = clock()
        self._last: dict[str, LastUse] = {}
        #: The throttled log lines of refused tokens (edgeprint.api.refusals).
        self.refusals = RefusalLog()
        self.replace(tokens)

    def replace(self, tokens: list[TokenConfig]) -> None:
        """Use ``tokens`` from the next request on (a config reload)."""
        self._tokens = [(bytes.fromhex(t.sha256), t) for t in tokens]
        self.tokens = tuple(tokens)

    def last_use(self, name: str) -> LastUse | None:
        """The last authenticated request of token ``name`` since :attr:`since`, or None."""
        return self._last.get(name)

    def expired(self, token: TokenConfig) -> bool:
        """True when ``token`` has an ``expires`` that the wall clock has reached."""
        return token.expires is not None and self._clock() >= token.expires.timestamp()

    def authenticate(
        self, authorization: str | None, needed: Needed, source: str | None = None
    ) -> TokenConfig:
        """The matching token if its role grants ``needed``; its use from ``source`` (the
        client's address) is remembered.

        Raises errors.Unauthorized (no/unknown token), errors.TokenExpired or
        errors.Forbidden. Every configured digest is compared, so timing does not reveal which.
        """
        if not authorization:
            raise errors.Unauthorized("missing bearer token (Authorization: Bearer <token>)")
        scheme, _, presented = authorization.partition(" ")
        if scheme.lower() != "bearer" or not presented.strip():
            raise errors.Unauthorized("Authorization must be 'Bearer <token>'")
        digest = hashlib.sha256(presented.strip().encode("utf-8", "surrogateescape")).digest()
        found: TokenConfig | None = None
        for expected, token in self._tokens:
            if hmac.compare_digest(digest, expected):
                found = token
        if found is None:
            raise errors.Unauthorized("unknown bearer token")
        if found.expires is not None and self.expired(found):
            raise errors.TokenExpired(found.name, found.expires, role=found.role)
        self._last[found.name] = LastUse(self._clock(), source)
        if needed not in _GRANTS[found.role]:
            raise errors.Forbidden(found.role, needed, roles_for(needed), token=found.name)
        return found
