"""Bearer-token auth: tokens are configured as SHA-256 digests, compared in constant time."""

from __future__ import annotations

import hashlib
import hmac

from edgeprint import errors
from edgeprint.config import TokenConfig

#: Role → roles it includes. A tech may do everything a kiosk may.
#: A station (issue 24) may use only the release pages' calls (edgeprint.api.release checks
#: its printers; no route's role is "station"); a kiosk or a tech token works there too.
_GRANTS = {
    "kiosk": {"kiosk", "station"},
    "tech": {"kiosk", "tech", "station"},
    "station": {"station"},
}


def token_digest(token: str) -> str:
    """Hex SHA-256 of a bearer token, as written in ``[[tokens]].sha256``."""
    return hashlib.sha256(token.encode()).hexdigest()


class TokenAuth:
    """Checks ``Authorization: Bearer …`` against the configured token digests."""

    def __init__(self, tokens: list[TokenConfig]) -> None:
        self.replace(tokens)

    def replace(self, tokens: list[TokenConfig]) -> None:
        """Use ``tokens`` from the next request on (a config reload)."""
        self._tokens = [(bytes.fromhex(t.sha256), t) for t in tokens]

    def authenticate(self, authorization: str | None, needed: str) -> TokenConfig:
        """The matching token if its role grants ``needed`` ("kiosk" or "tech").

        Raises errors.Unauthorized (no/unknown token) or errors.Forbidden.
        Every configured digest is compared, so timing does not reveal which.
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
        if needed not in _GRANTS[found.role]:
            raise errors.Forbidden(found.role, needed)
        return found
