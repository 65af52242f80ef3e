"""A seed → a scenario: printers with personalities drawn from the catalogue, jobs, and chaos.

Deterministic: the same seed gives the same scenario (what happens when it runs against
real processes still depends on timing; the oracle judges what did happen). Each of the
two printers (one pool) gets one to three behaviours that may be combined (no two that
exclude each other, at most one that uses the rig's fault file); the seed adds jobs (one to
three pages, sometimes two copies, some named for a printer), appliance SIGKILLs at random
instants or crash points, and whatever events the behaviours schedule (power cycles,
other clients' jobs, jams, a person at the panel).
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, replace
from typing import Any

from testbed.adversary.catalogue import BY_ID, CATALOGUE, Behaviour, Draw

PRINTERS = ("printer-01", "printer-02")
POOL = "lobby"
#: Crash points an appliance restart may be armed with (edgeprint/faults.py).
CRASH_POINTS = (
    "after_claim", "after_create_job", "during_send_document", "after_send_document",
    "after_printer_completed",
)  # fmt: skip


@dataclass(frozen=True)
class JobSpec:
    """One job the kiosk submits."""

    at: float  # seconds after the run starts
    pages: int
    copies: int
    printer: str | None  # named for this printer (else the pool)


@dataclass(frozen=True)
class Kill:
    """The appliance SIGKILLed ``at`` seconds in (``crash``: or at this crash point, armed at
    the restart before)."""

    at: float
    crash: str | None = None


@dataclass(frozen=True)
class Scenario:
    """Everything one seed does."""

    seed: int
    behaviours: dict[str, tuple[str, ...]]
    knobs: dict[str, dict[str, Any]]
    speeds: dict[str, float]
    jobs: tuple[JobSpec, ...]
    events: tuple[tuple[float, str, dict[str, Any]], ...]
    kills: tuple[Kill, ...]

    @property
    def all_behaviours(self) -> set[str]:
        return {b for bs in self.behaviours.values() for b in bs}

    @property
    def printer_restarts(self) -> int:
        return sum(1 for _, action, _ in self.events if action == "power_cycle")

    @property
    def calm(self) -> bool:
        """No appliance kill, no printer restart or outage: the seeds I5 judges."""
        return not self.kills and not any(BY_ID[b].restarts for b in self.all_behaviours)

    def to_dict(self) -> dict[str, Any]:
        """The scenario as JSON data (a regression test keeps it, whatever the generator
        draws for that seed later)."""
        return {
            "seed": self.seed,
            "behaviours": {p: list(b) for p, b in self.behaviours.items()},
            "knobs": {p: {k: list(v) if isinstance(v, tuple) else v for k, v in kn.items()}
                      for p, kn in self.knobs.items()},
            "speeds": self.speeds,
            "jobs": [asdict(j) for j in self.jobs],
            "events": [[at, action, args] for at, action, args in self.events],
            "kills": [asdict(k) for k in self.kills],
        }  # fmt: skip

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Scenario:
        tuples = {"delay_s", "extra_reasons"}
        return cls(
            seed=int(d["seed"]),
            behaviours={p: tuple(b) for p, b in d["behaviours"].items()},
            knobs={p: {k: tuple(v) if k in tuples else v for k, v in kn.items()}
                   for p, kn in d["knobs"].items()},
            speeds={p: float(v) for p, v in d["speeds"].items()},
            jobs=tuple(JobSpec(**j) for j in d["jobs"]),
            events=tuple(
                (float(at), str(a), {k: tuple(v) if k in tuples else v for k, v in args.items()})
                for at, a, args in d["events"]
            ),
            kills=tuple(Kill(**k) for k in d["kills"]),
        )  # fmt: skip

    def describe(self) -> str:
        parts = [f"seed {self.seed}:"]
        for p, bs in self.behaviours.items():
            parts.append(f"{p}={'+'.join(bs) or 'plain'}")
        parts.append(f"jobs={len(self.jobs)}")
        if self.kills:
            parts.append("kills=" + ",".join(f"{k.at:.2f}{'@' + k.crash if k.crash else ''}"
                                             for k in self.kills))  # fmt: skip
        return " ".join(parts)


def _compatible(chosen: list[Behaviour], b: Behaviour) -> bool:
    if b in chosen:
        return False
    if b.fault and any(c.fault for c in chosen):
        return False
    return not any(b.id in c.excludes or c.id in b.excludes for c in chosen)


def personality(rng: random.Random, n: int) -> list[Behaviour]:
    """``n`` behaviours that may share one printer."""
    chosen: list[Behaviour] = []
    pool = list(CATALOGUE)
    while len(chosen) < n:
        b = rng.choice(pool)
        if _compatible(chosen, b):
            chosen.append(b)
    return chosen


def scenario(seed: int, *, only: tuple[str, ...] | None = None) -> Scenario:
    """The scenario of ``seed`` (``only``: these behaviours on printer-01, nothing else — a
    behaviour's own deterministic test)."""
    rng = random.Random(seed)
    n_jobs = 1 if only is not None else rng.randint(3, 6)
    jobs = tuple(
        JobSpec(
            at=round(rng.uniform(0.0, 0.6), 3) if only is None else 0.0,
            pages=rng.choice((1, 1, 2, 3)) if only is None else 2,
            copies=2 if only is None and rng.random() < 0.15 else 1,
            printer=(
                PRINTERS[0]
                if only is not None
                else rng.choice(PRINTERS)
                if rng.random() < 0.25
                else None
            ),
        )
        for _ in range(n_jobs)
    )
    behaviours: dict[str, tuple[str, ...]] = {}
    knobs: dict[str, dict[str, Any]] = {}
    speeds: dict[str, float] = {}
    events: list[tuple[float, str, dict[str, Any]]] = []
    for p in PRINTERS:
        if only is not None:
            picked = [BY_ID[b] for b in only] if p == PRINTERS[0] else []
        else:
            picked = personality(rng, rng.choice((1, 1, 2, 2, 3)))
        d = Draw(rng=rng, printer=p, jobs=n_jobs, speed_s=round(rng.uniform(0.0, 0.05), 3),
                 alone=only is not None)  # fmt: skip
        for b in picked:
            b.apply(d)
        if only is not None and d.jobs_after > 0:  # the behaviour's test: the job comes later
            jobs = tuple(replace(j, at=max(j.at, d.jobs_after)) for j in jobs)
        behaviours[p] = tuple(b.id for b in picked)
        knobs[p] = d.knobs
        speeds[p] = d.speed_s
        events.extend(d.events)
    kills: list[Kill] = []
    if only is None:
        if rng.random() < 0.3:
            kills.append(Kill(round(rng.uniform(0.1, 1.2), 3)))
            if rng.random() < 0.3:
                kills.append(Kill(round(rng.uniform(1.3, 2.2), 3)))
        if rng.random() < 0.12:
            kills.append(Kill(0.0, rng.choice(CRASH_POINTS)))
    return Scenario(
        seed=seed, behaviours=behaviours, knobs=knobs, speeds=speeds, jobs=jobs,
        events=tuple(sorted(events, key=lambda e: e[0])), kills=tuple(sorted(kills, key=lambda k: k.at)),
    )  # fmt: skip
