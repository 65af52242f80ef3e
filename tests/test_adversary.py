"""The printer adversary in CI: a fixed set of generated seeds, and every seed that ever broke
an invariant as a named regression (testbed/adversary/; DESIGN §3).

Each seed: two real ippeveprinters behind adversary proxies, each with a personality of
several catalogue behaviours, a real appliance process SIGKILLed at random instants and
crash points, printers power-cycled, other clients printing; then I1–I6 against the
printers' own logs (testbed/adversary/oracle.py). ``python -m bench.adversary_bench --seeds
2000`` runs the same at scale.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed.adversary import generator, oracle, runner
from testbed.rig import Rig

pytestmark = pytest.mark.slow

#: The CI set: these seeds, every run.
SEEDS = range(1, 101)
REGRESSIONS: dict[str, dict[str, object]] = json.loads(
    (Path(__file__).resolve().parent / "adversary_regressions.json").read_text()
)


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    r = Rig(tmp_path_factory.mktemp("adversary") / "rig")
    r.start(len(generator.PRINTERS))
    try:
        yield r
    finally:
        r.stop()


async def _holds(scn: generator.Scenario, rig: Rig, work: Path) -> None:
    out = await runner.run(scn, work, rig)
    verdict = oracle.judge(out)
    said = "\n".join(f"  {v.invariant} {v.job}: {v.detail}" for v in verdict.violations)
    assert not verdict.violations, f"{scn.describe()}\n{said}"


@pytest.mark.parametrize("seed", SEEDS)
async def test_seed(seed: int, rig: Rig, tmp_path: Path) -> None:
    """Generated printers, chaos on the way: I1–I6 hold."""
    await _holds(generator.scenario(seed), rig, tmp_path)


@pytest.mark.parametrize("name", sorted(REGRESSIONS))
async def test_regression(name: str, rig: Rig, tmp_path: Path) -> None:
    """A seed that once broke an invariant (its note says how), as it was drawn: I1–I6 hold."""
    scn = generator.Scenario.from_dict(REGRESSIONS[name]["scenario"])  # type: ignore[arg-type]
    await _holds(scn, rig, tmp_path)
