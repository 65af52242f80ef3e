"""What can go wrong on the command line, and the exit code each gives (README, ``--help``).

0 ok; 1 the appliance answered with an error (its ``detail`` is printed), a
runtime failure of ``serve``, ``discover`` found nothing, or ``tls fingerprint``
found the certificate file is not what is served (or cannot be served); 2 bad usage or
bad config; 3 the appliance cannot be reached (the URL and where it came from
are named); 4 ``preflight`` found a printer that would fail the morning (each
reason is printed).
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_API_ERROR = 1
EXIT_USAGE = 2
EXIT_CONNECT = 3


class UsageError(Exception):
    """Bad arguments: exit 2."""


class ConnectFailed(Exception):
    """The appliance did not answer: exit 3."""


class ApiFailed(Exception):
    """The appliance answered with an error status: exit 1."""

    def __init__(self, status: int, message: str, body: bytes) -> None:
        super().__init__(message)
        self.status = status
        self.body = body
