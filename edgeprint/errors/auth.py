"""Who may ask: tokens, roles, stations, and release where you stand (issue 24)."""

from __future__ import annotations

from datetime import datetime

from edgeprint.errors.base import EdgeprintError


class Unauthorized(EdgeprintError):
    """No bearer token, or one that matches no configured token (HTTP 401)."""


class TokenExpired(Unauthorized):
    """A configured token whose ``expires`` has passed (HTTP 401; IPP not-authorized)."""

    def __init__(self, name: str, at: datetime, *, role: str | None = None) -> None:
        self.name = name
        self.at = at
        self.role = role
        super().__init__(f"token {name!r} expired at {at.isoformat()}")


class Forbidden(EdgeprintError):
    """The token is valid but its role may not do this (HTTP 403).

    ``allowed``: the roles that may (default: ``needed`` itself, a role's name)."""

    def __init__(
        self, role: str, needed: str, allowed: tuple[str, ...] = (), *, token: str | None = None
    ) -> None:
        self.role = role
        self.needed = needed
        #: The refused token's name, when a token was known (for the log; never the secret).
        self.token = token
        names = [repr(r) for r in allowed or (needed,)]
        who = " or ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
        only = " (a viewer only reads)" if role == "viewer" else ""
        super().__init__(f"role {role!r} may not do this{only}; it needs role {who}")


class StationForbidden(Forbidden):
    """A station token used at a printer or pool it is not set up for (HTTP 403)."""

    def __init__(self, token: str, name: str) -> None:
        self.role = "station"
        self.needed = "station"
        self.token = token
        EdgeprintError.__init__(self, f"station {token!r} may not release at {name!r}")


# --- release where you stand (issue 24) ------------------------------------------


class CredentialInvalid(EdgeprintError):
    """A release code, card or job PIN that opens nothing (HTTP 403).

    One fixed text, whatever was wrong (no such owner, wrong code, no such job):
    the answer reveals nothing about who exists.
    """

    def __init__(self) -> None:
        super().__init__("that code, card or PIN opens nothing here")


class CredentialTaken(EdgeprintError):
    """Another owner holds this release code or card (HTTP 409); says nothing more."""

    def __init__(self) -> None:
        super().__init__(
            "that release code or card is not available; choose another (codes and cards "
            "are one namespace, unique across owners)"
        )


class OwnerNotFound(EdgeprintError):
    """The owner has no release credentials to remove (HTTP 404)."""

    def __init__(self, owner: str) -> None:
        self.owner = owner
        super().__init__(f"owner {owner!r} has no release code or card")


class AddressLocked(EdgeprintError):
    """Too many wrong credentials from this client address: locked for a while (HTTP 429)."""

    def __init__(self, retry_after_s: int) -> None:
        self.retry_after_s = retry_after_s
        super().__init__(f"too many wrong codes from this address; try again in {retry_after_s} s")


class ReleaseKeyMissing(EdgeprintError):
    """The release credentials' lookup key cannot be had safely (HTTP 503): its file is
    missing while credentials exist, is not a key, or disagrees with the database."""

    def __init__(self, path: str, why: str) -> None:
        self.path = path
        super().__init__(
            f"release codes and cards cannot be checked: the lookup key file {path} {why}; "
            "restore it from the backup taken with the database, or remove the owners' "
            "codes and cards (DELETE /v1/owners/OWNER) and set new ones"
        )
