"""What this edgeprint is: version, and the commit it was built from."""

from __future__ import annotations

import subprocess
from pathlib import Path

from edgeprint import __version__


def commit() -> str:
    """The git commit this code was built from.

    A built file (``make dist``) carries it in ``edgeprint/_build.py``; a
    checkout asks git; anything else says ``unknown``.
    """
    try:
        from edgeprint import _build  # type: ignore[attr-defined]  # written by make dist

        return str(_build.COMMIT)
    except ImportError:
        pass
    try:
        out = subprocess.run(
            ["git", "-C", str(Path(__file__).parent), "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            timeout=2,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() or "unknown"


def describe() -> str:
    """``edgeprint 0.1.0 (commit 1a2b3c4d5e6f)``."""
    return f"edgeprint {__version__} (commit {commit()})"
