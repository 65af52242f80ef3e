"""The power-cut filesystem (testbed/powerfs.py) as a pytest fixture.

``powerfs`` mounts a fresh one under the test's tmp_path and yields its controller
(:class:`testbed.powerfs_control.PowerFs`): ``powerfs.mount`` is the folder to use,
``powerfs.cut(pids)`` cuts the power, ``powerfs.set_mode("erofs")`` injects faults.
Skips locally without FUSE/root/pyfuse3; fails when CI is set.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed.powerfs_control import PowerFs, unavailable
from tests.rig_fixtures import in_ci


def require_powerfs() -> None:
    why = unavailable()
    if why is None:
        return
    if in_ci():
        pytest.fail(f"powerfs: {why}; CI is set, so this is a failure, not a skip", pytrace=False)
    pytest.skip(f"powerfs: {why}; set CI=1 to make this a failure")


@pytest.fixture
def powerfs(tmp_path: Path) -> Iterator[PowerFs]:
    require_powerfs()
    fs = PowerFs(tmp_path / "powerfs-base", tmp_path / "powerfs")
    fs.start()
    try:
        yield fs
    finally:
        fs.close()
