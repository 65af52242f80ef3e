"""Power cuts under load (issue 27 §1): nothing acknowledged is lost, nothing prints twice.

The appliance's data_dir lives on powerfs (testbed/powerfs.py), which forgets at a cut
everything never fsync'ed: file data and folder entries. testbed/powercut.py runs the
load, cuts at seeded random instants and checks every answer the client received.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from testbed.powercut import PowerCutRun, line
from tests.powerfs_fixtures import require_powerfs
from tests.rig_fixtures import require_ippeveprinter

pytestmark = pytest.mark.slow

CUTS = int(os.environ.get("POWERCUT_CUTS", "20"))


async def test_power_cuts_under_load_lose_nothing(tmp_path: Path) -> None:
    """20 cuts at random instants: lost 0, corrupted 0, duplicates 0, webhooks all there."""
    require_powerfs()
    require_ippeveprinter()
    seed = int(os.environ.get("POWERCUT_SEED") or random.SystemRandom().randrange(10**6))
    print(f"powercut seed {seed} (POWERCUT_SEED={seed} replays it)")
    s = await PowerCutRun(tmp_path / "run", seed).run(CUTS)
    print(line(s))
    print({k: v for k, v in s.items() if k != "details"})
    assert s["cuts"] == CUTS
    assert s["acknowledged_jobs"] > CUTS, s  # the load ran: jobs were answered between cuts
    assert s["details"] == {
        "lost": [],
        "corrupted": [],
        "duplicates": {},
        "printed_unknown": [],
        "unprinted": [],
        "webhooks_lost": [],
    }, (seed, s)
    assert s["jobs_by_state"].get("DONE", 0) > 0, s
    # within the normal start-up time (READY_DEADLINE_S of testbed/proc.py is 20 s)
    assert s["restart_to_serving_ms"]["max"] < 20_000, s
