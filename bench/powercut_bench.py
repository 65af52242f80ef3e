"""Power cuts: the appliance's data_dir on a filesystem that forgets all that was not fsync'ed.

``--cuts`` rounds (500; ``--quick`` 20): start the appliance on what the last cut left,
check the store against every answer the client received, run a mixed load (submissions
with Idempotency-Key, releases, reads, printing on two real printers, webhooks,
housekeeping with a 2 s document retention) and cut the power at a seeded random instant
(testbed/powerfs.py: unsynced file data and folder entries are dropped). At the end:
released jobs printed, each once (printers' logs), every stored terminal event's webhook
delivered. Needs root, /dev/fuse, fusermount3 and Debian's python3-pyfuse3.

    .venv/bin/python -m bench.powercut_bench [--quick] [--cuts N] [--seed S]
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from bench.harness import BenchError, Run, figures_markdown, parser, row, seed
from testbed.powercut import PowerCutRun, line
from testbed.powerfs_control import unavailable

CUTS = 500
QUICK_CUTS = 20


def table(s: dict[str, Any]) -> list[dict[str, Any]]:
    restart = s["restart_to_serving_ms"]
    note = f"{s['cuts']} cuts, seed {s['seed']}"
    return [
        row("power cuts survived", "cuts", [s["cuts"]], note),
        row(
            "jobs acknowledged (2xx) across the cuts",
            "jobs",
            [s["acknowledged_jobs"]],
            f"{s['submissions']} submissions sent",
        ),
        row(
            "lost / corrupted / printed twice",
            "jobs",
            [s["lost"] + s["corrupted"] + s["duplicates"]],
            f"lost {s['lost']}, corrupted {s['corrupted']}, duplicates {s['duplicates']}",
        ),
        row(
            "webhooks of stored events lost",
            "webhooks",
            [s["webhooks_lost"]],
            f"{s['webhooks_delivered']} delivered",
        ),
        {
            "figure": "restart → serving after a cut",
            "unit": "ms",
            "median": restart["p50"],
            "min": None,
            "max": restart["max"],
            "note": "ready line and a 200 to GET /v1/jobs",
        },
        {
            "figure": "start → serving after a clean stop, same filesystem and store",
            "unit": "ms",
            "median": s["clean_start_ms"]["p50"],
            "min": None,
            "max": s["clean_start_ms"]["max"],
            "note": f"{s['clean_start_ms']['starts']} starts after the last cut (normal start-up)",
        },
    ]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; the exit code (0: nothing lost, corrupted or printed twice)."""
    ap = parser("powercut", __doc__, f"{QUICK_CUTS} cuts")
    ap.add_argument("--cuts", type=int, default=None, help=f"default {CUTS} (quick {QUICK_CUTS})")
    ap.add_argument("--seed", type=int, default=None, help="replay a run (default: random)")
    args = ap.parse_args(argv)
    why = unavailable()
    if why is not None:
        print(f"bench: powercut needs FUSE: {why}", file=sys.stderr)
        return 2
    cuts = args.cuts or (QUICK_CUTS if args.quick else CUTS)
    the_seed = seed(args.seed)
    print(f"powercut: seed {the_seed}, {cuts} cuts", file=sys.stderr)
    with Run("powercut", args) as run:
        out = run.attempt_async("powercut", PowerCutRun(run.work / "run", the_seed).run(cuts))
    rows = table(out) if out is not None else []
    if out is not None:
        for k in ("lost", "corrupted", "duplicates", "printed_unknown", "unprinted"):
            if out[k]:
                run.failures.append(f"{k} = {out[k]}: {out['details'][k]}")
        if out["webhooks_lost"]:
            run.failures.append(f"webhooks lost: {out['details']['webhooks_lost']}")
    code = run.finish(
        figures_markdown(rows),
        settings={"cuts": cuts, "seed": the_seed},
        summary=out,
        table=rows,
    )
    if out is not None:
        print(line(out))
    return code


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (BenchError, AssertionError) as exc:
        sys.exit(f"bench: {exc}")
