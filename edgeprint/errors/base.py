"""The root of the tree and the configuration's errors."""

from __future__ import annotations

from collections.abc import Sequence


class EdgeprintError(Exception):
    """Root of every error edgeprint raises on purpose."""


class ConfigError(EdgeprintError):
    """The configuration file cannot be used.

    ``problems`` holds ``(key, message)`` pairs, the key in dotted form
    (``printers[0].name``), so that every message names the bad key.
    """

    def __init__(self, path: str, problems: Sequence[tuple[str, str]]) -> None:
        self.path = path
        self.problems = list(problems)
        lines = "\n".join(f"  {key}: {msg}" for key, msg in self.problems)
        super().__init__(f"invalid config {path}:\n{lines}")
