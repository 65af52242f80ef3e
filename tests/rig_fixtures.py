"""Pytest fixtures for real IPP printers (see testbed/rig.py).

Registered from tests/conftest.py with ``pytest_plugins = ["tests.rig_fixtures"]``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed.rig import Rig, find_tool
from tests.lprint_rig import LPrintRig

#: CI must fail, not skip, when the printers cannot be had.
_FALSY = {"", "0", "false", "no", "off"}


def in_ci() -> bool:
    """True when the CI environment variable is set (to anything but an explicit false)."""
    return os.environ.get("CI", "").strip().lower() not in _FALSY


def require_ippeveprinter() -> None:
    """Skip (locally) or fail (in CI) when ippeveprinter is not installed."""
    if find_tool("ippeveprinter") is not None:
        return
    why = (
        "ippeveprinter not found: install the Debian packages cups-ipp-utils and "
        "dbus-daemon (apt-get install cups-ipp-utils dbus-daemon)"
    )
    if in_ci():
        pytest.fail(f"{why}; CI is set, so this is a failure, not a skip", pytrace=False)
    pytest.skip(f"{why}; set CI=1 to make this a failure")


@pytest.fixture
def printers(tmp_path: Path) -> Iterator[Rig]:
    """Two real printers, printer-01 and printer-02, on free loopback ports.

    Yields the :class:`~testbed.rig.Rig`: ``printers["printer-01"].uri``,
    ``printers.printed("printer-01")``, ``for p in printers``. Stopped after the test.
    """
    require_ippeveprinter()
    rig = Rig(tmp_path / "rig")
    rig.start(2)
    try:
        yield rig
    finally:
        rig.stop()


@pytest.fixture
def three_printers(tmp_path: Path) -> Iterator[Rig]:
    """Three real printers printing at 0.05 s/page, so a queue forms (for failover and chaos)."""
    require_ippeveprinter()
    rig = Rig(tmp_path / "rig3")
    rig.start(3)
    try:
        for p in rig:
            rig.set_speed(p.name, 0.05)
        yield rig
    finally:
        rig.stop()


@pytest.fixture
def lprint(tmp_path: Path) -> Iterator[LPrintRig]:
    """LPrint (tests/lprint_rig.py): a 4-inch 203 dpi Zebra (ZPL), 4x3 in labels loaded.

    Needs root (a private network namespace); skipped locally otherwise, a failure in CI.
    """
    why = LPrintRig.missing()
    if why is not None:
        if in_ci():
            pytest.fail(f"{why}; CI is set, so this is a failure, not a skip", pytrace=False)
        pytest.skip(why)
    rig = LPrintRig(tmp_path / "lprint")
    rig.start()
    try:
        yield rig
    finally:
        rig.stop()


def one_printer(root: Path, formats: str | None = None, **kw: object) -> Iterator[Rig]:
    """One real ippeveprinter (``formats``: its document-format-supported), stopped after."""
    require_ippeveprinter()
    rig = Rig(root, **({"formats": formats} if formats else {}), **kw)  # type: ignore[arg-type]
    rig.start(1)
    try:
        yield rig
    finally:
        rig.stop()


@pytest.fixture
def pwg_printer(tmp_path: Path) -> Iterator[Rig]:
    """A raster-only ippeveprinter: PWG raster and JPEG, no PDF."""
    yield from one_printer(tmp_path / "pwg", "image/pwg-raster,image/jpeg")


@pytest.fixture
def urf_printer(tmp_path: Path) -> Iterator[Rig]:
    """An AirPrint-like ippeveprinter: Apple raster and JPEG only."""
    yield from one_printer(tmp_path / "urf", "image/urf,image/jpeg")


@pytest.fixture
def ipps_printer(tmp_path: Path) -> Iterator[Rig]:
    """One ippeveprinter with its own self-signed certificate (it serves ipps on its port)."""
    yield from one_printer(tmp_path / "rig", own_certificates=True)
