"""The printer adversary at scale: many seeds of generated printers, invariants I1–I6 each.

Each seed draws a personality for each of two printers from the catalogue
(testbed/adversary/catalogue.py), combines several behaviours, SIGKILLs the appliance at
random instants and crash points, power-cycles printers and lets other clients print;
then the oracle checks I1–I6 against the printers' own logs. Printed: per behaviour and
per pair of behaviours, how many seeds ran and how many broke which invariant, then one
summary line. Every seed that broke an invariant is written out with its scenario (for a
named regression test).

    .venv/bin/python -m bench.adversary_bench [--seeds N] [--first S] [--quick] [--list]
        [--workers K] [--with BEHAVIOUR] [--jsonl PATH] [--merge PATH ...]

The seeds are shared out over ``--workers`` child processes (default 2: a seed spends most
of its time waiting on printers and time-outs, so two streams fit two cores), each with
its own printers; the appliance runs from a copy of ``edgeprint/`` taken at the start, so
the tree may be edited meanwhile. Each seed's verdict is one line of ``--jsonl`` as soon as
it is judged; ``--merge`` makes the tables of earlier runs' lines without running a seed
(a later file's line for a seed replaces an earlier one's). ``--with BEHAVIOUR`` runs only
the seeds that draw it: after a change that only a behaviour's answers reach, those seeds
are run again and merged over the full run.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.harness import Run, parser, percentile, signals_as_exit
from testbed.adversary import catalogue, generator, oracle, runner
from testbed.rig import Rig

QUICK_SEEDS = 100
SEEDS = 2000
#: Child processes the seeds are shared out over, each with its own two printers.
WORKERS = 2


def _cells(counts: Counter[str]) -> str:
    return " ".join(f"{i} {counts[i]}" for i in oracle.INVARIANTS)


async def _seeds(seeds: Sequence[int], work: Path, jsonl: Path) -> None:
    """Run ``seeds`` one after another on one pair of printers; each verdict is appended to
    ``jsonl`` (one JSON object a line) as soon as it is judged."""
    rig = Rig(work / "rig")
    rig.start(len(generator.PRINTERS))
    try:
        for seed in seeds:
            scn = generator.scenario(seed)
            d = work / f"seed-{seed}"
            d.mkdir()
            out = await runner.run(scn, d, rig)
            v = oracle.judge(out)
            entry = {
                "seed": seed,
                "behaviours": scn.behaviours,
                "kills": out.kills,
                "restarts": sum(len(t) for t in out.restarts.values()),
                "seconds": round(out.seconds, 2),
                "violations": [vars(x) for x in v.violations],
                "done": v.done,
                "unverified": v.unverified,
                "dead": v.dead,
                "hidden": v.hidden,
                "undecidable": v.undecidable,
                "peak_requests": v.peak_requests,
                "peak_connections": v.peak_connections,
                "sent_while_stopped": v.sent_while_stopped,
            }
            if v.violations:
                entry["scenario"] = scn.to_dict()
            with jsonl.open("a") as f:
                f.write(json.dumps(entry) + "\n")
            mark = " ".join(sorted({x.invariant for x in v.violations})) or "ok"
            print(f"{scn.describe()}: {mark} ({out.seconds:.1f} s)", flush=True)
    finally:
        rig.stop()


def _tables(log: Sequence[dict[str, Any]]) -> tuple[str, str, dict[str, Any]]:
    per: dict[str, Counter[str]] = defaultdict(Counter)
    pairs: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for e in log:
        broke = Counter(x["invariant"] for x in e["violations"])
        present = sorted({b for bs in e["behaviours"].values() for b in bs})
        for b in present:
            per[b]["seeds"] += 1
            per[b].update({k: 1 for k in broke})
        for a, b in itertools.combinations(present, 2):
            pairs[(a, b)]["seeds"] += 1
            pairs[(a, b)].update({k: 1 for k in broke})
    head = "| behaviour | part | seeds | " + " | ".join(oracle.INVARIANTS) + " |"
    rows = [head, "|---|---|---:|" + "---:|" * len(oracle.INVARIANTS)]
    for b in catalogue.CATALOGUE:
        c = per.get(b.id, Counter())
        rows.append(
            f"| {b.id} | {b.part} | {c['seeds']} | "
            + " | ".join(str(c[i]) for i in oracle.INVARIANTS)
            + " |"
        )
    pair_rows = [
        f"{a} + {b}: {c['seeds']} seeds; {_cells(c)}" for (a, b), c in sorted(pairs.items())
    ]
    stats = {
        "behaviours_seen": sum(1 for b in catalogue.CATALOGUE if per.get(b.id)),
        "pairs_seen": len(pairs),
        "per_behaviour": {b: dict(c) for b, c in per.items()},
        "per_pair": {f"{a}+{b}": dict(c) for (a, b), c in pairs.items()},
    }
    return "\n".join(rows), "\n".join(pair_rows), stats


def _read(paths: Sequence[Path]) -> list[dict[str, Any]]:
    """The seeds' verdicts in ``paths`` (JSON lines), in seed order, one per seed."""
    by_seed: dict[int, dict[str, Any]] = {}
    for path in paths:
        for line in path.read_text().splitlines():
            if line.strip():
                e = json.loads(line)
                by_seed[e["seed"]] = e
    return [by_seed[s] for s in sorted(by_seed)]


def _workers(args: Any, seeds: Sequence[int], run: Run, jsonl: Path) -> None:
    """Share ``seeds`` out over ``args.workers`` child processes (the i-th to worker i mod
    K), each printing its seeds' lines as it goes; wait for all."""
    k = max(1, min(args.workers, len(seeds)))
    children = []
    for w in range(k):
        cmd = [
            sys.executable,
            "-m",
            "bench.adversary_bench",
            "--child",
            "--seed-list",
            ",".join(str(x) for x in seeds[w::k]),
            "--jsonl",
            str(run.work / f"part-{w}.jsonl"),
        ]
        children.append(subprocess.Popen(cmd, cwd=Path(__file__).resolve().parent.parent))
    try:
        codes = [c.wait() for c in children]
    finally:
        for c in children:
            if c.poll() is None:
                c.terminate()
                c.wait()
    for w, code in enumerate(codes):
        if code != 0:
            run.failures.append(f"worker {w} exited {code}")
    parts = sorted(run.work.glob("part-*.jsonl"))
    with jsonl.open("a") as f:
        for e in _read(parts):
            f.write(json.dumps(e) + "\n")


def _child(args: Any) -> int:
    """One worker: its seeds on its own printers, verdicts to ``--jsonl``."""
    seeds = [int(x) for x in args.seed_list.split(",") if x]
    work = Path(args.jsonl).with_suffix(".work")
    work.mkdir(parents=True, exist_ok=True)
    with signals_as_exit():  # a SIGTERM from the parent still stops this worker's printers
        asyncio.run(_seeds(seeds, work, Path(args.jsonl)))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the seeds; the exit code (0: every invariant held on every seed)."""
    ap = parser("adversary", __doc__, f"{QUICK_SEEDS} seeds (the CI-sized run)")
    ap.add_argument(
        "--seeds", type=int, default=None, help=f"default {SEEDS} ({QUICK_SEEDS} with --quick)"
    )
    ap.add_argument("--first", type=int, default=1, help="the first seed (default 1)")
    ap.add_argument("--list", action="store_true", help="print the catalogue and stop")
    ap.add_argument("--workers", type=int, default=WORKERS, help=f"default {WORKERS}")
    ap.add_argument("--jsonl", type=Path, default=None, help="append each seed's verdict here")
    ap.add_argument(
        "--merge",
        type=Path,
        nargs="+",
        default=None,
        help="make the tables of these --jsonl files; run no seed",
    )
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--seed-list", default="", help=argparse.SUPPRESS)
    ap.add_argument(
        "--with",
        dest="with_",
        metavar="BEHAVIOUR",
        default=None,
        help="only the seeds (of those given) with BEHAVIOUR",
    )
    args = ap.parse_args(argv)
    if args.list:
        print(catalogue.listing())
        return 0
    if args.child:
        return _child(args)
    n = args.seeds or (QUICK_SEEDS if args.quick else SEEDS)
    with Run("adversary", args, snapshot=args.merge is None) as run:
        started = time.monotonic()
        if args.merge is not None:
            log = _read(args.merge)
        else:
            if run.src is not None:  # every appliance runs the copy taken at the start
                repo = Path(__file__).resolve().parent.parent  # bench/ and testbed/ as they are
                os.environ.update(PYTHONSAFEPATH="1", PYTHONPATH=f"{run.src}{os.pathsep}{repo}")
            jsonl = args.jsonl or run.work / "seeds.jsonl"
            seeds: Sequence[int] = range(args.first, args.first + n)
            if args.with_ is not None:
                seeds = [x for x in seeds if args.with_ in generator.scenario(x).all_behaviours]
            _workers(args, seeds, run, jsonl)
            log = _read([jsonl])
        took = time.monotonic() - started
    broke: Counter[str] = Counter(x["invariant"] for e in log for x in e["violations"])
    per, pairs, stats = _tables(log)
    kills = sum(e["kills"] for e in log)
    restarts = sum(e["restarts"] for e in log)
    summary = (
        f"adversary: {len(log)} seeds, {stats['behaviours_seen']} behaviours, {kills} appliance "
        f"kills, {restarts} printer restarts; "
        + ", ".join(f"{i} {broke[i]}" for i in oracle.INVARIANTS)
    )
    failing = [e for e in log if e["violations"]]
    for e in failing:
        run.failures.append(
            f"seed {e['seed']}: "
            + "; ".join(f"{x['invariant']} {x['detail']}" for x in e["violations"])
        )
    seconds = [e["seconds"] for e in log]
    figures = {
        "seeds": len(log),
        "behaviours": stats["behaviours_seen"],
        "pairs": stats["pairs_seen"],
        "appliance_kills": kills,
        "printer_restarts": restarts,
        "violations": {i: broke[i] for i in oracle.INVARIANTS},
        "duplicates": broke["I2"],
        "silent_done": broke["I1"],
        "needless_doubt": broke["I5"],
        "storms": broke["I6"],
        "done": sum(e["done"] for e in log),
        "printed_unverified": sum(e["unverified"] for e in log),
        "dead": sum(e["dead"] for e in log),
        "hidden_by_printer": sum(e["hidden"] for e in log),
        "undecidable": sum(e["undecidable"] for e in log),
        "peak_requests_per_s": max((e["peak_requests"] for e in log), default=0),
        "sent_while_stopped": sum(e.get("sent_while_stopped", 0) for e in log),
        "seed_seconds_p50": percentile(seconds, 50),
        "seconds": round(took, 1),
    }
    table_rows = [
        {
            "figure": "seeds of generated printers, invariants I1–I6 (violations)",
            "unit": "",
            "median": len(log),
            "note": ", ".join(f"{i} {broke[i]}" for i in oracle.INVARIANTS),
        },
        {
            "figure": "behaviours; appliance kills; printer restarts",
            "unit": "",
            "median": stats["behaviours_seen"],
            "note": f"kills {kills}, restarts {restarts}",
        },
    ]
    markdown = f"{per}\n\n{summary}"
    print(pairs)
    code = run.finish(
        markdown,
        summary=figures,
        table=table_rows,
        seeds=log if failing else [],
        failing_seeds=[e["seed"] for e in failing],
        per_behaviour=stats["per_behaviour"],
        per_pair=stats["per_pair"],
    )
    print(summary)
    print(
        f"open head: {figures['sent_while_stopped']} job(s) made on a printer more than "
        f"{oracle.STOPPED_GRACE_S} s after it said it was stopped"
    )
    (run.args.out.parent / "adversary_failing.json").write_text(json.dumps(failing, indent=2))
    return code


if __name__ == "__main__":
    sys.exit(main())
