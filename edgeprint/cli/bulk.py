"""``edgeprint release|cancel|replay --filter … --limit N`` (or ``--ids``): many jobs at once.

The command first asks the API for a dry run (``"dry_run": true``) and shows how many
jobs the call would take, asks to go on (unless ``--yes``), then makes the real call
and prints each job's outcome in words. Between the two the jobs may move on: the
real call's outcomes are what happened.

Exit status (``--help``, README): 0 when every selected job was acted on (or a filter
matched none); 1 when some were not (not found, moved on, a release PIN, …: each is
listed), or the question was answered no; 2 bad usage.
"""

from __future__ import annotations

import argparse
import collections
import sys
from typing import Any

from edgeprint.cli import client, render
from edgeprint.cli.errors import EXIT_API_ERROR, EXIT_OK, UsageError

#: The filter keys ``--filter`` takes (the API's BulkFilter fields).
FILTER_KEYS = (
    "owner",
    "pool",
    "printer",
    "state",
    "dead_reason",
    "created_after",
    "created_before",
)

#: The word of each outcome, as a person reads it after the job's id.
_WORDS = {
    "released": "released",
    "cancelled": "cancelled",
    "cancel-requested": "cancel sent to the printer (it was printing)",
    "replayed": "replayed (it prints once more)",
    "resolved": "resolved",
    "conflict": "not done: it had moved on",
    "not-found": "not done: no such job",
    "pin-required": "not done: it has a release PIN: release it alone with its PIN (at the "
    'printer\'s release page, or POST /v1/jobs/ID/release with {"pin": …})',
    "queue-full": "not done: its printer's queue is full; try again later",
    "unsupported-document": "not done: no printer of its target takes its document",
    "missing-target": "not done: it names no printer or pool (give --printer or --pool)",
    "storage-full": "not done: the appliance's disk is full",
    "store-unavailable": "not done: the job store cannot work now",
    "error": "not done: an error (see the appliance log)",
}


#: Per verb, words that differ from _WORDS: what really works for that verb. A
#: bulk body takes no PIN; a tech token needs none, and the single cancel takes one.
_VERB_WORDS = {
    ("cancel", "pin-required"): "not done: it has a release PIN: cancel it with a tech token "
    "or its PIN (edgeprint cancel ID --pin PIN)",
}

#: The outcomes that mean the job was acted on (exit 0 when every job's is one).
DONE = frozenset({"released", "cancelled", "cancel-requested", "replayed", "resolved"})

#: The exit codes, for ``--help``.
EXIT_HELP = (
    "exit status: 0 every selected job was acted on (or a filter matched none); 1 some were "
    "not (no such job, moved on, a release PIN, …: each is listed) or the answer was no; "
    "2 bad usage; 3 cannot connect"
)


def parse_filter(text: str) -> dict[str, str]:
    """``owner=ann,state=DEAD`` as a dict; raises argparse.ArgumentTypeError."""
    out: dict[str, str] = {}
    for part in text.split(","):
        key, eq, value = part.partition("=")
        key = key.strip()
        if not eq or not key or not value.strip():
            raise argparse.ArgumentTypeError(
                f"give KEY=VALUE pairs separated by commas, not {part!r}"
            )
        if key not in FILTER_KEYS:
            raise argparse.ArgumentTypeError(
                f"unknown filter key {key!r}; known: {', '.join(FILTER_KEYS)}"
            )
        if key in out:
            raise argparse.ArgumentTypeError(f"filter key {key!r} given twice")
        out[key] = value.strip().upper() if key == "state" else value.strip()
    return out


def parse_ids(text: str) -> list[str]:
    """``ID,ID,…`` (each 32 lowercase hex characters); raises argparse.ArgumentTypeError."""
    ids = [i.strip() for i in text.split(",") if i.strip()]
    bad = [i for i in ids if len(i) != 32 or any(c not in "0123456789abcdef" for c in i)]
    if not ids or bad:
        raise argparse.ArgumentTypeError(
            f"job ids are 32 lowercase hex characters, separated by commas, not {text!r}"
        )
    return ids


def add_options(p: argparse.ArgumentParser, *, required: bool) -> None:
    """The bulk options of ``release``, ``cancel`` and ``replay``, and their exit codes."""
    p.epilog = EXIT_HELP
    which = p.add_mutually_exclusive_group(required=required)
    which.add_argument(
        "--filter",
        type=parse_filter,
        metavar="KEY=VALUE,…",
        help=f"the jobs, by what they are ({', '.join(FILTER_KEYS)}); oldest first",
    )
    which.add_argument("--ids", type=parse_ids, metavar="ID,…", help="the jobs, by id")
    p.add_argument("--limit", type=int, metavar="N", help="required: the most jobs (1-500)")
    p.add_argument("--yes", action="store_true", help="do not ask first")


def check(args: argparse.Namespace) -> str | None:
    """What is wrong with the bulk options (None: fine)."""
    if args.limit is None:
        return f"{args.command}: --limit N is required with --filter or --ids (at most 500)"
    if not 1 <= args.limit <= 500:
        return f"{args.command}: --limit must be 1 to 500, not {args.limit}"
    if args.ids is not None and len(args.ids) > args.limit:
        return f"{args.command}: {len(args.ids)} ids is more than --limit {args.limit}"
    return None


def _body(args: argparse.Namespace) -> dict[str, Any]:
    body: dict[str, Any] = {"limit": args.limit}
    if args.ids is not None:
        body["ids"] = args.ids
    else:
        body["filter"] = args.filter
    for target in ("printer", "pool"):
        if getattr(args, f"to_{target}", None):
            body[target] = getattr(args, f"to_{target}")
    return body


def _described(args: argparse.Namespace) -> str:
    if args.ids is not None:
        return "the ids given"
    return ", ".join(f"{k}={v}" for k, v in args.filter.items()) or "any"


def _confirm(question: str) -> bool:
    print(question, end=" ", flush=True)
    try:
        answer = sys.stdin.readline()
    except (OSError, ValueError):
        return False
    return answer.strip().lower() in ("y", "yes")


def run(api: client.Api, args: argparse.Namespace, as_json: bool) -> int:
    """One bulk call (``args.command`` is the verb), asked first unless ``--yes``."""
    why = check(args)
    if why is not None:
        raise UsageError(why)
    verb = args.command
    path = f"/v1/jobs/{verb}"
    body = _body(args)
    if not args.yes:
        _, dry = api.json("POST", path, json_body={**body, "dry_run": True})
        n = sum(1 for r in dry.get("results", []) if r.get("outcome") == "selected")
        if n == 0 and dry.get("results"):  # ids that cannot be acted on: say why each
            render.out(lines(verb, dry))
            return EXIT_API_ERROR
        if n == 0:
            render.out([f"no job to {verb} matches {_described(args)}; nothing done"])
            return EXIT_OK
        more = " (more match: the oldest are taken)" if dry.get("more") else ""
        if not _confirm(f"{verb} {n} job(s) ({_described(args)}){more}? [y/N]"):
            render.out(["nothing done"])
            return EXIT_API_ERROR
    raw, answer = api.json("POST", path, json_body=body)
    if as_json:
        render.emit_raw(raw)
    else:
        render.out(lines(verb, answer))
    return exit_code(answer)


def exit_code(answer: dict[str, Any]) -> int:
    """0 when every selected job was acted on (none selected: nothing left undone), else 1."""
    results = answer.get("results", [])
    return EXIT_OK if all(r.get("outcome") in DONE for r in results) else EXIT_API_ERROR


def lines(verb: str, answer: dict[str, Any]) -> list[str]:
    """The answer in words: a count per outcome, then one line per job."""
    results = answer.get("results", [])
    if not results:
        return [f"no job to {verb} matched; nothing done"]
    counts = collections.Counter(str(r.get("outcome")) for r in results)
    summary = ", ".join(f"{n} {o}" for o, n in counts.most_common())
    out = [f"{verb}: {len(results)} job(s): {summary}"]
    for r in results:
        outcome = str(r.get("outcome"))
        word = _VERB_WORDS.get((verb, outcome)) or _WORDS.get(outcome, outcome)
        word = word.replace(" ID ", f" {r.get('id')} ").replace("/ID/", f"/{r.get('id')}/")
        state = f", now {r['state']}" if r.get("state") else ""
        out += render.wrap(f"{r.get('id')}  {word}{state}", "  ", "    ")
    if answer.get("more"):
        out.append("more jobs match: run it again for the next ones")
    return out
