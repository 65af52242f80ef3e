"""The ``edgeprint`` command line: commands, options and the checks on their values."""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence

from edgeprint import printable
from edgeprint.cli import audit, bulk, client, credentials, discover, locate, setup, tls, trust
from edgeprint.states import JobState

#: A full job id, or the 6-31 hex it starts with (the status page shows 8: cli/short_ids.py).
_JOB_ID_RE = re.compile(r"^[0-9a-f]{6,32}$")
_PRINTER_RE = re.compile(r"^[a-z0-9-]{1,40}$")
_KEY_RE = re.compile(r"^[\x21-\x7e]{8,80}$")


def _common_options() -> argparse.ArgumentParser:
    """Options of every technician command, accepted before or after the command name."""
    common = argparse.ArgumentParser(add_help=False)
    g = common.add_argument_group("connection")
    g.add_argument(
        "--url",
        default=argparse.SUPPRESS,
        help=f"the appliance's API; wins over --config (without it: the URL of --config, else "
        f"${client.URL_ENV}, else of the config found, else {client.DEFAULT_URL})",
    )
    g.add_argument(
        "--config",
        dest="api_config",
        metavar="PATH",
        default=argparse.SUPPRESS,
        help=f"take the URL from this config's [server] host and port (without it and "
        f"${client.URL_ENV}: ${locate.CONFIG_ENV}, else the first of "
        f"{', '.join(str(p) for p in locate.CONFIG_CANDIDATES)} that is there)",
    )
    g.add_argument(
        "--token",
        default=argparse.SUPPRESS,
        help=f"bearer token (default ${client.TOKEN_ENV}; prefer a token file: arguments "
        "show in ps)",
    )
    g.add_argument(
        "--token-file",
        metavar="PATH",
        default=argparse.SUPPRESS,
        help=f"read the token from this file (default ${client.TOKEN_FILE_ENV}, else "
        f"{credentials.TOKEN_FILE_NAME} next to the config the URL came from, if readable)",
    )
    g.add_argument(
        "--fingerprint",
        metavar="PIN",
        default=argparse.SUPPRESS,
        help="an https:// appliance's certificate SHA-256 (AB:CD:…) or key pin (sha256//…), "
        f"as edgeprint tls fingerprint shows it on the box (default ${trust.FINGERPRINT_ENV}, "
        "else the certificate file of the config found, else the system CAs)",
    )
    g.add_argument(
        "--json",
        action="store_true",
        default=argparse.SUPPRESS,
        help="print the API's JSON as-is (for scripts)",
    )
    g.add_argument(
        "--timeout",
        type=_positive_float,
        metavar="SECONDS",
        default=argparse.SUPPRESS,
        help=f"give up on a request after this long (default {client.DEFAULT_TIMEOUT_S:g})",
    )
    return common


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError("must be more than 0 and at most 3600")
    return value


def _limit(text: str) -> int:
    if not re.fullmatch(r"[0-9]{1,3}", text) or not 1 <= int(text) <= 500:
        raise argparse.ArgumentTypeError(f"an integer from 1 to 500, not {text!r}")
    return int(text)


def _cursor(text: str) -> str:
    if not re.fullmatch(r"[0-9]{1,18}", text):
        raise argparse.ArgumentTypeError(f"a cursor as printed by an earlier page, not {text!r}")
    return text


def _state(text: str) -> str:
    value = text.upper()
    if value not in {s.value for s in JobState}:
        raise argparse.ArgumentTypeError(
            f"one of {', '.join(s.value for s in JobState)}, not {text!r}"
        )
    return value


def _job_id(text: str) -> str:
    if not _JOB_ID_RE.fullmatch(text.lower()):
        raise argparse.ArgumentTypeError(
            f"a job id is 32 hex characters, or its first 6-31 (the status page shows 8), "
            f"not {text!r}"
        )
    return text.lower()


def _pin(text: str) -> str:
    if not re.fullmatch(r"[0-9]{4,12}", text):
        raise argparse.ArgumentTypeError(f"a release PIN is 4-12 digits, not {text!r}")
    return text


def _reason(text: str) -> str:
    if not 1 <= len(text) <= 200 or not text.strip() or printable.CONTROL_RE.search(text):
        raise argparse.ArgumentTypeError("1-200 characters, not blank, no control characters")
    return text


def _id_prefix(text: str) -> str:
    if not re.fullmatch(r"[0-9a-f]{4,32}", text):
        raise argparse.ArgumentTypeError(f"4-32 lowercase hex characters, not {text!r}")
    return text


def _idempotency_key(text: str) -> str:
    if not _KEY_RE.fullmatch(text):
        raise argparse.ArgumentTypeError(
            f"an Idempotency-Key is 8-80 printable ASCII characters, no spaces, not {text!r}"
        )
    return text


def _printer(text: str) -> str:
    if not _PRINTER_RE.fullmatch(text):
        raise argparse.ArgumentTypeError(
            f"a printer name is 1-40 characters from a-z, 0-9 and '-', not {text!r}"
        )
    return text


class _VersionAction(argparse.Action):
    """``--version``: the version and the commit it was built from (asks git only when used)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(
            option_strings,
            dest,
            nargs=0,
            default=argparse.SUPPRESS,
            help=str(kwargs.get("help", "")),
        )

    def __call__(self, parser: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        from edgeprint.version import describe

        print(describe())
        parser.exit()


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """``argv`` parsed, with the checks one argument cannot make alone; a usage error
    prints the usage and exits 2 (SystemExit), as argparse does."""
    p = parser()
    args = p.parse_args(argv)
    if args.command == "printers" and args.action in ("trust", "sticker") and not args.printer:
        p.error(
            f"printers {args.action}: name the printer: edgeprint printers {args.action} PRINTER"
        )
    if (
        args.command == "printers"
        and args.action != "sticker"
        and (args.out or args.print or args.base)
    ):
        p.error("--out, --print and --base go with: edgeprint printers sticker PRINTER")
    if args.command == "replay":
        many = args.filter is not None or args.ids is not None
        if (args.job_id is None) == (not many):
            p.error("replay: give JOB_ID, or --filter … or --ids … with --limit N")
        if args.job_id is not None and (args.limit is not None or args.yes):
            p.error("replay JOB_ID replays one job: --limit and --yes go with --filter or --ids")
    if args.command == "cancel":
        many = args.filter is not None or args.ids is not None
        if (args.job_id is None) == (not many):
            p.error("cancel: give JOB_ID, or --filter … or --ids … with --limit N")
        if args.job_id is not None and (args.limit is not None or args.yes):
            p.error("cancel JOB_ID cancels one job: --limit and --yes go with --filter or --ids")
        if args.job_id is None and args.pin is not None:
            p.error("cancel: --pin goes with one JOB_ID (a bulk call takes no PIN)")
    if args.command == "release":
        many = args.filter is not None or args.ids is not None
        if (args.job_id is None) == (not many):
            p.error("release: give JOB_ID, or --filter … or --ids … with --limit N (not both)")
        if args.job_id is not None and (args.limit is not None or args.yes):
            p.error("release JOB_ID releases one job: --limit and --yes go with --filter or --ids")
        if args.job_id is None and args.pin is not None:
            p.error("release: --pin goes with one JOB_ID (a bulk call takes no PIN)")
    if args.command in ("release", "cancel", "replay") and (
        args.filter is not None or args.ids is not None
    ):
        why = bulk.check(args)
        if why is not None:
            p.error(why)
    return args


def parser() -> argparse.ArgumentParser:
    """The ``edgeprint`` command line: every command, its options and their checks."""
    common = _common_options()
    p = argparse.ArgumentParser(
        prog="edgeprint",
        description="edgeprint print-job appliance",
        parents=[common],
        epilog="exit codes: 0 ok, 1 the appliance answered an error (release|cancel|replay "
        "--filter/--ids: or some selected job was not acted on), 2 bad usage, 3 cannot "
        "connect, 4 preflight: a printer would fail the morning",
    )
    p.add_argument("--version", action=_VersionAction, help="print version and commit, then exit")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    s = sub.add_parser("serve", help="run the appliance")
    s.add_argument("--config", required=True, metavar="PATH", help="TOML config file")
    s.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])

    c = sub.add_parser("check-config", help="validate a config file and exit")
    c.add_argument("path", metavar="PATH")

    t = sub.add_parser("token", help="bearer tokens")
    tsub = t.add_subparsers(dest="token_command", required=True, metavar="ACTION")
    tn = tsub.add_parser("new", help="make a new token and print its [[tokens]] lines")
    tn.add_argument("--role", required=True, choices=["kiosk", "tech", "station", "viewer"])
    tn.add_argument("--name", default=None, help="token name (default: ROLE-<random>)")
    tl = "the appliance's tokens: role, printers, expiry, last use; never a secret (tech)"
    tsub.add_parser("list", help=tl, description=tl, parents=[common])

    discover.add_parser(sub)
    setup.add_parser(sub)
    tls.add_parser(sub, common)

    def tech(name: str, help_: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help_, description=help_, parents=[common])

    tech("status", "one screen: printers, pools, jobs by state, dead-letter queue (viewer or tech)")
    pr = tech(
        "printers",
        "every printer in full: IPP state, reasons, queues, errors (viewer or tech; trust, "
        "sticker: tech)",
    )
    pr.add_argument(
        "action",
        nargs="?",
        choices=["trust", "sticker"],
        help="trust: accept the certificate an ipps printer presents now (after a reset); "
        "sticker: a PDF label with its name and a QR code of its release page",
    )
    pr.add_argument("printer", nargs="?", metavar="PRINTER", type=_printer)
    sticker = pr.add_argument_group("sticker")
    sticker.add_argument(
        "--out",
        metavar="FILE",
        help="write the sticker here (default sticker-PRINTER.pdf, none with --print alone)",
    )
    sticker.add_argument(
        "--print", action="store_true", help="print the sticker on that printer through edgeprint"
    )
    sticker.add_argument(
        "--base",
        metavar="URL",
        help="the release pages' base URL in the QR code (default [release] public_url, else "
        "the address --url reaches unless loopback, else the box's LAN address and port; a "
        "loopback base is refused: pass --base http://<box address>:<port>)",
    )
    j = tech("jobs", "list jobs, newest first (kiosk, viewer or tech)")
    j.add_argument("--state", type=_state, help="HELD, RELEASED, PRINTING, DONE, DEAD, …")
    j.add_argument("--owner")
    j.add_argument("--printer", type=_printer)
    j.add_argument("--limit", type=_limit, help="1-500 (default 50)")
    j.add_argument("--cursor", type=_cursor, help="next page, as printed after a full page")
    j.add_argument("--key", type=_idempotency_key, help="the job made with this Idempotency-Key")
    j.add_argument("--id-prefix", type=_id_prefix, help="jobs whose id starts with these 4-32 hex")
    j.add_argument("--owner-contains", help="jobs whose owner contains this, any case")
    d = tech("dead-letter", "the dead-letter queue, oldest first (viewer or tech)")
    d.add_argument("--limit", type=_limit, help="1-500 (default 100)")
    d.add_argument("--cursor", type=_cursor, help="next page, as printed after a full page")
    r = tech(
        "replay",
        "send a DEAD job back to its printer or pool, once; or many: --filter/--ids (tech)",
    )
    r.add_argument("job_id", metavar="JOB_ID", type=_job_id, nargs="?")
    bulk.add_options(r, required=False)
    rel = tech(
        "release",
        "release a HELD job (JOB_ID [--printer P | --pool Q] [--pin PIN]), or many: --filter "
        "or --ids, and --limit (kiosk or tech)",
    )
    rel.add_argument("job_id", metavar="JOB_ID", type=_job_id, nargs="?")
    rel.add_argument(
        "--pin",
        type=_pin,
        metavar="PIN",
        help="JOB_ID's release PIN, when it was submitted with one",
    )
    bulk.add_options(rel, required=False)
    to = rel.add_mutually_exclusive_group()
    to.add_argument(
        "--printer",
        dest="to_printer",
        type=_printer,
        metavar="PRINTER",
        help="release to this printer (default: each job's own printer or pool)",
    )
    to.add_argument(
        "--pool", dest="to_pool", type=_printer, metavar="POOL", help="release to this pool"
    )
    can = tech(
        "cancel",
        "cancel a job (JOB_ID [--pin PIN]), or many: --filter or --ids, and --limit "
        "(kiosk or tech)",
    )
    can.add_argument("job_id", metavar="JOB_ID", type=_job_id, nargs="?")
    can.add_argument(
        "--pin",
        type=_pin,
        metavar="PIN",
        help="JOB_ID's release PIN: a kiosk token cancelling a HELD job that has one needs it "
        "(a tech token does not)",
    )
    bulk.add_options(can, required=False)
    idf = tech("identify", "make a printer show itself: IPP Identify-Printer or a test page (tech)")
    idf.add_argument("printer", metavar="PRINTER", type=_printer)
    idf.add_argument("--test-page", action="store_true", help="print a one-page test print instead")
    tech("stats", "jobs by state, dead letters by reason, printers in short (viewer or tech)")
    rs = tech("resolve", "settle a DEAD outcome_unknown job: it printed, or print it again (tech)")
    rs.add_argument("job_id", metavar="JOB_ID", type=_job_id)
    how = rs.add_mutually_exclusive_group(required=True)
    how.add_argument("--printed", dest="printed", action="store_true", help="it came out: DONE")
    how.add_argument(
        "--not-printed", dest="printed", action="store_false", help="it did not: print once more"
    )
    rp = tech("reprint", "print a DONE job again, on purpose, with a reason (kiosk or tech)")
    rp.add_argument("job_id", metavar="JOB_ID", type=_job_id)
    rp.add_argument(
        "--reason",
        required=True,
        type=_reason,
        help="why (lost, damaged, misspelt then fixed): recorded in both jobs' events",
    )
    rp.add_argument(
        "--key",
        metavar="KEY",
        type=_idempotency_key,
        help="the Idempotency-Key of an earlier run that got no answer (default: a new one)",
    )
    pf = tech(
        "preflight",
        "will every printer get through the morning? reachable, round trip, state, stock, "
        "supplies, TLS pin, and a test badge each (tech); exit 4 when one would fail",
    )
    pf.add_argument(
        "--badge",
        metavar="FILE",
        help="the badge PDF: its first page's size is checked against each printer's ready "
        "stock, and it is the test badge (default: [event] badge_media, a generated badge)",
    )
    pf.add_argument("--no-print", action="store_true", help="check only; print no test badge")
    pf.add_argument(
        "--wait",
        type=_positive_float,
        metavar="SECONDS",
        default=60.0,
        help="how long to wait for the test badges to print (default 60)",
    )
    audit.add_arguments(tech("audit", "who did what: the audit trail, newest first (tech)"))
    tech(
        "event",
        "the event's mode: live or rehearsal, since when, the rehearsal's jobs (viewer or tech)",
    )
    tech("rehearsal", "start a rehearsal: new jobs are tests until go-live (tech)")
    tech(
        "go-live",
        "end the rehearsal: its jobs still waiting are cancelled, the live figures start (tech)",
    )
    for verb, what in (
        ("pause", "stop giving a printer new work; the job in hand finishes (tech)"),
        ("resume", "give a paused printer work again (tech)"),
        ("drain", "pause a printer and move its waiting jobs to its pool (tech)"),
    ):
        tech(verb, what).add_argument("printer", metavar="PRINTER", type=_printer)
    return p
