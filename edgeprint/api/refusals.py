"""One log line for a refused token (issue 26): a trace without filling the journal.

A known token refused — its role may not (403) or it has expired (401) — is one line,
event ``auth_refused``, with the token's name and role, the method, the path and the peer;
an unknown token (or a malformed ``Authorization``) is one line without any name. Never
the secret. Not an audit row: the request did nothing, and a flood must not fill the
table (DESIGN §5). Throttled: at most one line per token name (one for all unknown
tokens) every ``every_s`` seconds, saying how many it held back, so a flood writes a line
every ten seconds whatever its rate. A request without ``Authorization`` is not logged.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from aiohttp import web

from edgeprint import errors
from edgeprint.logs import log_event

log = logging.getLogger(__name__)

EVENT = "auth_refused"
#: The throttle's key for tokens that match none (no name may be logged for them).
UNKNOWN = ""


class RefusalLog:
    """The throttled ``auth_refused`` lines of one appliance."""

    def __init__(self, every_s: float = 10.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.every_s = every_s
        self._clock = clock
        self._last: dict[str, float] = {}
        self._held: dict[str, int] = {}

    def _due(self, key: str) -> int | None:
        """None when a line for ``key`` is held back, else how many were held before it."""
        now = self._clock()
        last = self._last.get(key)
        if last is not None and now - last < self.every_s:
            self._held[key] = self._held.get(key, 0) + 1
            return None
        self._last[key] = now
        return self._held.pop(key, 0)

    def refused(
        self,
        exc: errors.EdgeprintError,
        method: str,
        path: str,
        peer: str | None,
        *,
        token: str | None = None,
        role: str | None = None,
    ) -> None:
        """Log the refusal of a request that carried ``Authorization`` (``token``/``role``:
        the known token's name and role; None for an unknown one)."""
        held = self._due(token or UNKNOWN)
        if held is None:
            return
        status = 403 if isinstance(exc, errors.Forbidden) else 401
        who = f"token {token!r} ({role})" if token is not None else "an unknown token"
        why = "expired" if isinstance(exc, errors.TokenExpired) else str(exc)
        msg = f"{status}: {who} refused: {method[:10]} {path[:200]} from {peer}: {why}"
        if held:
            msg += f" (and {held} more held back)"
        log_event(
            log,
            EVENT,
            message=msg,
            level=logging.WARNING,
            status=status,
            token=token,
            role=role,
            method=method[:10],
            path=path[:200],
            peer=peer,
            suppressed=held,
        )


def note(refusals: RefusalLog, request: web.Request, exc: errors.EdgeprintError) -> None:
    """Log ``exc`` (a 401 or 403 of the role check) for ``request`` if it carried
    ``Authorization``: with the token's name when the token is known."""
    if "Authorization" not in request.headers:
        return
    token: str | None = None
    role: str | None = None
    if isinstance(exc, errors.TokenExpired):
        token, role = exc.name, exc.role
    elif isinstance(exc, errors.Forbidden):
        token, role = exc.token, exc.role
    refusals.refused(exc, request.method, request.path, request.remote, token=token, role=role)
