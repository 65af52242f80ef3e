"""The ``edgeprint`` command: the appliance (serve, check-config, token new) and the
technicians' commands that talk to a running appliance's local API.

Technician commands (DESIGN §8)::

    edgeprint status                      one screen: printers, pools, jobs by state, dead letter
    edgeprint printers                    every printer in full, and the pools
    edgeprint jobs [--state S] [--owner O] [--printer P] [--limit N] [--cursor C]
    edgeprint dead-letter [--limit N] [--cursor C]
    edgeprint replay JOB_ID               DEAD → RELEASED (once)
    edgeprint pause|resume|drain PRINTER

They take ``--url URL`` (default ``$EDGEPRINT_URL`` or http://127.0.0.1:8631) or
``--config PATH`` (the URL from its ``[server]`` host and port), ``--token TOKEN``
(default ``$EDGEPRINT_TOKEN``; prefer the variable: arguments show in ``ps``) and
``--json`` (the API's JSON as-is, for scripts). The HTTP client is the standard
library's, so the command starts fast and needs no event loop.

Exit codes: 0 ok; 1 the appliance answered with an error (its ``detail`` is
printed), or a runtime failure of ``serve``; 2 bad usage or bad config; 3 the
appliance cannot be reached (the URL is named).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import socket
import sys
import textwrap
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from http.client import HTTPException
from typing import IO, Any

from edgeprint import __version__, cli_discover, cli_setup
from edgeprint.states import JobState

EXIT_OK = 0
EXIT_API_ERROR = 1
EXIT_USAGE = 2
EXIT_CONNECT = 3

DEFAULT_URL = "http://127.0.0.1:8631"
URL_ENV = "EDGEPRINT_URL"
TOKEN_ENV = "EDGEPRINT_TOKEN"
DEFAULT_TIMEOUT_S = 10.0
#: A bearer token as it may travel in a header: printable ASCII, no spaces.
_TOKEN_RE = re.compile(r"^[\x21-\x7e]{1,4096}$")
_JOB_ID_RE = re.compile(r"^[0-9a-f]{32}$")
_PRINTER_RE = re.compile(r"^[a-z0-9-]{1,40}$")
#: Control characters (C0, DEL, C1) never reach the terminal: printers write messages too.
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f]")
WIDTH = 80
#: Dead jobs shown by ``status`` (the full list: ``edgeprint dead-letter``).
STATUS_DEAD_SHOWN = 5


class UsageError(Exception):
    """Bad arguments: exit 2."""


class ConnectFailed(Exception):
    """The appliance did not answer: exit 3."""


class ApiFailed(Exception):
    """The appliance answered with an error status: exit 1."""

    def __init__(self, status: int, message: str, body: bytes) -> None:
        super().__init__(message)
        self.status = status
        self.body = body


# --- the argument parser ---------------------------------------------------------------


def _common_options() -> argparse.ArgumentParser:
    """Options of every technician command, accepted before or after the command name."""
    common = argparse.ArgumentParser(add_help=False)
    g = common.add_argument_group("connection")
    where = g.add_mutually_exclusive_group()
    where.add_argument(
        "--url", default=argparse.SUPPRESS,
        help=f"the appliance's API (default ${URL_ENV} or {DEFAULT_URL})",
    )  # fmt: skip
    where.add_argument(
        "--config", dest="api_config", metavar="PATH", default=argparse.SUPPRESS,
        help="take the URL from this config file's [server] host and port",
    )  # fmt: skip
    g.add_argument(
        "--token", default=argparse.SUPPRESS,
        help=f"bearer token (default ${TOKEN_ENV}; prefer the variable, arguments show in ps)",
    )  # fmt: skip
    g.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS,
        help="print the API's JSON as-is (for scripts)",
    )  # fmt: skip
    g.add_argument(
        "--timeout", type=_positive_float, metavar="SECONDS", default=argparse.SUPPRESS,
        help=f"give up on a request after this long (default {DEFAULT_TIMEOUT_S:g})",
    )  # fmt: skip
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
    if not _JOB_ID_RE.fullmatch(text):
        raise argparse.ArgumentTypeError(f"a job id is 32 lowercase hex characters, not {text!r}")
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


def _parser() -> argparse.ArgumentParser:
    common = _common_options()
    p = argparse.ArgumentParser(
        prog="edgeprint",
        description="edgeprint print-job appliance",
        parents=[common],
        epilog="exit codes: 0 ok, 1 the appliance answered an error, 2 bad usage, 3 cannot connect",
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
    tn.add_argument("--role", required=True, choices=["kiosk", "tech"])
    tn.add_argument("--name", default=None, help="token name (default: ROLE-<random>)")

    cli_discover.add_parser(sub)
    cli_setup.add_parser(sub)

    def tech(name: str, help_: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help_, description=help_, parents=[common])

    tech("status", "one screen: printers, pools, jobs by state, dead-letter queue (tech)")
    pr = tech("printers", "every printer in full: IPP state, reasons, queues, errors (tech)")
    pr.add_argument(
        "action", nargs="?", choices=["trust"],
        help="trust: accept the certificate an ipps printer presents now (after a reset)",
    )  # fmt: skip
    pr.add_argument("printer", nargs="?", metavar="PRINTER", type=_printer)
    j = tech("jobs", "list jobs, newest first (kiosk or tech)")
    j.add_argument("--state", type=_state, help="HELD, RELEASED, PRINTING, DONE, DEAD, …")
    j.add_argument("--owner")
    j.add_argument("--printer", type=_printer)
    j.add_argument("--limit", type=_limit, help="1-500 (default 50)")
    j.add_argument("--cursor", type=_cursor, help="next page, as printed after a full page")
    d = tech("dead-letter", "the dead-letter queue, oldest first (tech)")
    d.add_argument("--limit", type=_limit, help="1-500 (default 100)")
    d.add_argument("--cursor", type=_cursor, help="next page, as printed after a full page")
    r = tech("replay", "send a DEAD job back to its printer or pool, once (tech)")
    r.add_argument("job_id", metavar="JOB_ID", type=_job_id)
    idf = tech("identify", "make a printer show itself: IPP Identify-Printer or a test page (tech)")
    idf.add_argument("printer", metavar="PRINTER", type=_printer)
    idf.add_argument("--test-page", action="store_true", help="print a one-page test print instead")
    tech("stats", "jobs by state, dead letters by reason, printers in short (tech)")
    rs = tech("resolve", "settle a DEAD outcome_unknown job: it printed, or print it again (tech)")
    rs.add_argument("job_id", metavar="JOB_ID", type=_job_id)
    how = rs.add_mutually_exclusive_group(required=True)
    how.add_argument("--printed", dest="printed", action="store_true", help="it came out: DONE")
    how.add_argument(
        "--not-printed", dest="printed", action="store_false", help="it did not: print once more"
    )
    for verb, what in (
        ("pause", "stop giving a printer new work; the job in hand finishes (tech)"),
        ("resume", "give a paused printer work again (tech)"),
        ("drain", "pause a printer and move its waiting jobs to its pool (tech)"),
    ):
        tech(verb, what).add_argument("printer", metavar="PRINTER", type=_printer)
    return p


# --- the appliance commands --------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # --help, --version (0) and usage errors (2)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    if args.command == "check-config":
        return _check_config(args.path)
    if args.command == "token":
        return _token_new(args.role, args.name)
    if args.command == "serve":
        return _serve(args.config, args.log_level)
    if args.command == "discover":
        return cli_discover.run(args)
    if args.command == "setup":
        return cli_setup.run(args)
    return _tech(args)


def _check_config(path: str) -> int:
    from edgeprint import errors
    from edgeprint.config import load_config

    try:
        cfg = load_config(path)
    except errors.ConfigError as exc:
        print(exc, file=sys.stderr)
        return EXIT_USAGE
    print(
        f"ok: {len(cfg.printers)} printer(s), {len(cfg.pools)} pool(s), "
        f"{len(cfg.tokens)} token(s); data_dir {cfg.server.data_dir}; "
        f"listening on {cfg.server.host}:{cfg.server.port}"
    )
    from edgeprint.config_checks import warnings

    for line in warnings(cfg):
        print(f"warning: {line}", file=sys.stderr)
    return EXIT_OK


def _token_new(role: str, name: str | None) -> int:
    from edgeprint.api.auth import token_digest

    token = secrets.token_urlsafe(32)
    name = name or f"{role}-{secrets.token_hex(3)}"
    print(f"# bearer token (shown once; give it to the {role}):")
    print(f"# {token}")
    print("[[tokens]]")
    print(f'name = "{name}"')
    print(f'role = "{role}"')
    print(f'sha256 = "{token_digest(token)}"')
    return EXIT_OK


def _serve(config_path: str, log_level: str) -> int:
    import asyncio
    import logging
    import pathlib

    from edgeprint import errors, logs
    from edgeprint.config import load_config

    logs.configure(log_level)
    try:
        cfg = load_config(config_path)
    except errors.ConfigError as exc:
        print(exc, file=sys.stderr)
        return EXIT_USAGE
    from edgeprint.config_checks import warnings

    for line in warnings(cfg):  # check-config's warnings, in the journal too
        logging.getLogger("edgeprint").warning(
            line, extra={"event": "config_warning", "key": line.split(":", 1)[0]}
        )
    from edgeprint.server import serve  # the server stack is not needed for other commands

    try:
        asyncio.run(serve(cfg, pathlib.Path(config_path)))
    except errors.StoreError as exc:
        print(f"edgeprint: {exc}", file=sys.stderr)
        return 1
    except BaseExceptionGroup as group:  # a worker's store error, out of the dispatcher's TaskGroup
        failed, rest = group.split(errors.StoreError)
        if failed is None or rest is not None:
            raise
        first = failed.exceptions[0]
        print(f"edgeprint: the job store failed: {first}; exiting for a restart", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"edgeprint: cannot start: {exc}", file=sys.stderr)
        return 1
    return EXIT_OK


# --- HTTP client (stdlib) -------------------------------------------------------------------


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is an error: following it would hand the bearer token to another URL."""

    def redirect_request(
        self, req: urllib.request.Request, fp: IO[bytes], code: int, msg: str,
        headers: Any, newurl: str,
    ) -> urllib.request.Request | None:  # fmt: skip
        return None


@dataclass
class Api:
    """The appliance's API at ``base`` (no trailing slash)."""

    base: str
    token: str | None
    timeout_s: float = DEFAULT_TIMEOUT_S

    def __post_init__(self) -> None:
        # No proxies (the API is local; *_proxy variables must not reroute the token),
        # no redirects.
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirects())

    def call(
        self, method: str, path: str, query: dict[str, str] | None = None, *, auth: bool = True,
        json_body: object = None,
    ) -> bytes:  # fmt: skip
        """The response body of a 2xx; raises ApiFailed, ConnectFailed or UsageError."""
        url = self.base + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        headers = {"Accept": "application/json", "User-Agent": f"edgeprint-cli/{__version__}"}
        if auth:
            if not self.token:
                raise UsageError(
                    f"no token: set {TOKEN_ENV} (or pass --token) to a tech token "
                    "(edgeprint token new --role tech)"
                )
            headers["Authorization"] = f"Bearer {self.token}"
        data = b"" if method == "POST" else None
        if json_body is not None:
            data = json.dumps(json_body).encode()
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with self._opener.open(req, timeout=self.timeout_s) as resp:
                body: bytes = resp.read()
                return body
        except urllib.error.HTTPError as exc:
            with exc:
                raw = _read_quietly(exc)
            raise ApiFailed(exc.code, _problem_message(exc.code, exc.reason, raw), raw) from None
        except urllib.error.URLError as exc:
            raise ConnectFailed(self._cannot(exc.reason)) from None
        except (OSError, HTTPException) as exc:  # reset, time-out while reading, bad status line
            raise ConnectFailed(self._cannot(exc)) from None

    def json(
        self, method: str, path: str, query: dict[str, str] | None = None, *, auth: bool = True,
        json_body: object = None,
    ) -> tuple[bytes, Any]:  # fmt: skip
        """The raw body and its JSON value; a 2xx that is not JSON is an ApiFailed."""
        raw = self.call(method, path, query, auth=auth, json_body=json_body)
        try:
            return raw, json.loads(raw)
        except ValueError:
            raise ApiFailed(
                200, f"the answer from {self.base}{path} is not JSON: is this an edgeprint?", raw
            ) from None

    def _cannot(self, reason: object) -> str:
        if isinstance(reason, TimeoutError | socket.timeout):
            why = f"no answer within {self.timeout_s:g} s"
        elif isinstance(reason, OSError) and reason.strerror:
            why = reason.strerror
        else:
            why = str(reason) or type(reason).__name__
        return f"cannot connect to {self.base}: {why}"


def _read_quietly(resp: urllib.error.HTTPError) -> bytes:
    try:
        return resp.read(64 * 1024)
    except (OSError, HTTPException):
        return b""


def _problem_message(status: int, reason: str, raw: bytes) -> str:
    """``403 Forbidden: <detail>`` from a problem document (or the bare status)."""
    detail = ""
    title = reason
    try:
        problem = json.loads(raw)
    except ValueError:
        problem = None
    if isinstance(problem, dict):
        detail = str(problem.get("detail") or "")
        title = str(problem.get("title") or reason)
        for err in problem.get("errors") or []:
            if isinstance(err, dict):
                detail += f"; {err.get('loc')}: {err.get('message')}"
    hint = {
        401: f" (check {TOKEN_ENV} or --token)",
        403: " (this needs a tech token)",
    }.get(status, "")
    if 300 <= status < 400:
        detail = "the appliance answered with a redirect, which is not followed (check --url)"
    return _clean(f"{status} {title}: {detail or 'no detail given'}{hint}")


def _base_url(args: argparse.Namespace) -> str:
    """The API's base URL from --url, --config, $EDGEPRINT_URL or the default."""
    if hasattr(args, "api_config"):
        return _url_from_config(args.api_config)
    url: str = getattr(args, "url", None) or os.environ.get(URL_ENV) or DEFAULT_URL
    try:
        parts = urllib.parse.urlsplit(url.strip())
    except ValueError as exc:
        raise UsageError(f"bad --url: {exc}") from None
    if "@" in parts.netloc:  # checked first: never echo a password
        raise UsageError(f"bad --url: no user or password in the URL; use {TOKEN_ENV}")
    try:
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as exc:
        raise UsageError(f"bad --url {url!r}: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"bad --url {url!r}: give http://HOST:PORT (e.g. {DEFAULT_URL})")
    if parts.query or parts.fragment:
        raise UsageError(f"bad --url {url!r}: no query or fragment")
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))


def _url_from_config(path: str) -> str:
    from edgeprint import errors
    from edgeprint.config import load_config

    try:
        server = load_config(path).server
    except errors.ConfigError as exc:
        raise UsageError(str(exc)) from None
    if server.port == 0:
        raise UsageError(f"{path}: server.port is 0 (a free port at start): pass --url")
    host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(server.host, server.host)
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{server.port}"


def _token(args: argparse.Namespace) -> str | None:
    raw: str | None = getattr(args, "token", None)
    if raw is None:
        raw = os.environ.get(TOKEN_ENV)
    if raw is None or not raw.strip():
        return None
    token = raw.strip()
    if not _TOKEN_RE.fullmatch(token):
        where = "--token" if hasattr(args, "token") else TOKEN_ENV
        raise UsageError(f"{where} holds characters a token cannot have (spaces, non-ASCII)")
    return token


# --- technician commands --------------------------------------------------------------------


def _tech(args: argparse.Namespace) -> int:
    as_json = bool(getattr(args, "json", False))
    try:
        api = Api(_base_url(args), _token(args), getattr(args, "timeout", DEFAULT_TIMEOUT_S))
        COMMANDS[args.command](api, args, as_json)
    except UsageError as exc:
        print(f"edgeprint: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ConnectFailed as exc:
        print(f"edgeprint: {exc}", file=sys.stderr)
        return EXIT_CONNECT
    except ApiFailed as exc:
        if as_json and exc.body:
            _emit_raw(exc.body)
        print(f"edgeprint: {exc}", file=sys.stderr)
        return EXIT_API_ERROR
    except BrokenPipeError:  # `edgeprint jobs | head`: the reader is gone, not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except KeyboardInterrupt:
        return 130
    return EXIT_OK


def _emit_raw(body: bytes) -> None:
    text = body.decode("utf-8", "replace")
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def _out(lines: Sequence[str]) -> None:
    sys.stdout.write("".join(line.rstrip() + "\n" for line in lines))


def cmd_status(api: Api, args: argparse.Namespace, as_json: bool) -> None:
    """``edgeprint status``: one screen."""
    _, printers = api.json("GET", "/v1/printers")
    _, dead = api.json("GET", "/v1/dead-letter", {"limit": str(STATUS_DEAD_SHOWN)})
    counts, counts_error = _job_counts(api)
    if as_json:
        combined = {
            "url": api.base,
            "printers": printers.get("printers", []),
            "pools": printers.get("pools", []),
            "jobs_by_state": counts,
            "dead_letter": dead,
        }
        _emit_raw(json.dumps(combined, indent=2).encode())
        return
    now = datetime.now(UTC)
    lines = [f"edgeprint at {api.base}  {now:%Y-%m-%d %H:%M:%S} UTC", ""]
    lines += _printer_table(printers.get("printers", []), short_ids=True)
    lines += ["", *_pool_table(printers.get("pools", []))]
    lines.append("")
    if counts is None:
        lines.append(f"JOBS  counts unavailable: {counts_error}")
    else:
        text = "  ".join(f"{s} {counts.get(s, 0)}" for s in (st.value for st in JobState))
        lines += _wrap(text, "JOBS  ", "      ")
    n = int(dead.get("count", 0))
    lines.append(f"DEAD LETTER  {n} job(s)" + ("" if n == 0 else "  (edgeprint dead-letter)"))
    for job in dead.get("jobs", [])[:STATUS_DEAD_SHOWN]:
        lines.append(
            f"  {job['id']}  {job.get('dead_reason') or '-'}  "
            f"{job.get('printed_on') or job.get('printer') or job.get('pool') or '-'}  "
            f"{_ago(job.get('updated_at'), now)} ago"
        )
    if n > STATUS_DEAD_SHOWN:
        lines.append(f"  … and {n - STATUS_DEAD_SHOWN} more")
    _out([_clean(line) for line in lines])


def _job_counts(api: Api) -> tuple[dict[str, int] | None, str]:
    """Jobs by state from ``GET /v1/stats``, or None and why not."""
    try:
        _, body = api.json("GET", "/v1/stats")
    except (ApiFailed, ConnectFailed) as exc:
        return None, str(exc)
    counts = body.get("jobs_by_state") if isinstance(body, dict) else None
    if not isinstance(counts, dict) or not counts:
        return None, "/v1/stats has no jobs_by_state"
    return {str(k): int(v) for k, v in counts.items()}, ""


def _health(p: dict[str, Any]) -> str:
    if p.get("printer_state") is None and not p.get("reachable"):
        return "unknown" if not p.get("last_error") else "DOWN"
    if not p.get("reachable"):
        return "DOWN"
    return "ok" if p.get("healthy") else "UNHEALTHY"


def _reasons(p: dict[str, Any]) -> list[str]:
    return [r for r in p.get("printer_state_reasons") or [] if r != "none"]


def _printer_table(printers: list[dict[str, Any]], *, short_ids: bool) -> list[str]:
    if not printers:
        return ["no printers configured"]
    rows = [
        [
            p["name"],
            p.get("pool") or "-",
            _health(p),
            p.get("printer_state") or "-",
            _num(p.get("queued_job_count")),
            str(p.get("waiting", 0)),
            _age(p.get("oldest_waiting_s")),
            "PAUSED" if p.get("paused") else "no",
            _short(p.get("printing_job"), short_ids),
        ]
        for p in printers
    ]
    headers = ["PRINTER", "POOL", "HEALTH", "STATE", "QUEUED", "WAIT", "OLDEST", "PAUSED",
               "PRINTING"]  # fmt: skip
    lines = _table(headers, rows, right={4, 5, 6})
    for p in printers:
        notes = []
        if p.get("health_reason") and _health(p) != "ok":
            notes.append(f"why: {p['health_reason']}")
        if _reasons(p):
            notes.append("reasons: " + ", ".join(_reasons(p)))
        if p.get("last_error") and _health(p) != "ok":
            notes.append(f"last error: {p['last_error']}")
        if notes:
            lines += _wrap(f"{p['name']}: " + "; ".join(notes))
    return lines


def _pool_table(pools: list[dict[str, Any]]) -> list[str]:
    if not pools:
        return ["no pools configured"]
    rows = [
        [p["name"], " ".join(p.get("printers", [])), str(p.get("waiting", 0)),
         _age(p.get("oldest_waiting_s"))]
        for p in pools
    ]  # fmt: skip
    return _table(["POOL", "PRINTERS", "WAIT", "OLDEST"], rows, right={2, 3})


def cmd_printers(api: Api, args: argparse.Namespace, as_json: bool) -> None:
    """``edgeprint printers``: every printer in full, then the pools.

    ``edgeprint printers trust PRINTER``: re-trust an ipps printer's certificate.
    """
    if getattr(args, "action", None) == "trust":
        if not args.printer:
            raise SystemExit("edgeprint printers trust PRINTER: name the printer")
        _printer_action("trust")(api, args, as_json)
        return
    raw, body = api.json("GET", "/v1/printers")
    if as_json:
        _emit_raw(raw)
        return
    lines: list[str] = []
    for p in body.get("printers", []):
        fields = [
            ("pool", p.get("pool") or "-"),
            ("health", _health(p)),
            ("why", p.get("health_reason") or "-"),
            ("reachable", _yes(p.get("reachable"))),
            ("paused", _yes(p.get("paused"))),
            ("printer-state", p.get("printer_state") or "-"),
            ("reasons", ", ".join(_reasons(p)) or "none"),
            ("message", p.get("printer_state_message") or "-"),
            ("queued in printer", _num(p.get("queued_job_count"))),
            ("waiting", f"{p.get('waiting', 0)} (oldest {_age(p.get('oldest_waiting_s'))})"),
            ("printing", p.get("printing_job") or "-"),
            ("last error", p.get("last_error") or "-"),
        ]
        lines += _wrap(f"{p['name']}  {p.get('uri', '')}", "", "    ")
        for label, value in fields:
            lines += _wrap(f"{label + ':':<19}{value}", "  ", " " * 21)
        lines.append("")
    if not body.get("printers"):
        lines += ["no printers configured", ""]
    lines += _pool_table(body.get("pools", []))
    _out([_clean(line) for line in lines])


def cmd_jobs(api: Api, args: argparse.Namespace, as_json: bool) -> None:
    """``edgeprint jobs``: a page of jobs, newest first."""
    query = {
        k: v
        for k, v in (
            ("state", args.state), ("owner", args.owner), ("printer", args.printer),
            ("limit", None if args.limit is None else str(args.limit)), ("cursor", args.cursor),
        )
        if v is not None
    }  # fmt: skip
    raw, body = api.json("GET", "/v1/jobs", query)
    if as_json:
        _emit_raw(raw)
        return
    now = datetime.now(UTC)
    jobs = body.get("jobs", [])
    rows = [
        [
            j["id"], j["state"], _trim(j.get("owner") or "-", 14),
            _trim(j.get("printed_on") or j.get("printer") or j.get("pool") or "-", 14),
            str(j.get("priority", "")), str(j.get("attempts", "")), _ago(j.get("updated_at"), now),
        ]
        for j in jobs
    ]  # fmt: skip
    lines = (
        _table(["ID", "STATE", "OWNER", "WHERE", "PRI", "ATT", "CHANGED"], rows, right={4, 5, 6})
        if jobs
        else ["no jobs"]
    )
    if body.get("next_cursor"):
        lines.append(f"more: add --cursor {body['next_cursor']}")
    _out([_clean(line) for line in lines])


def cmd_dead_letter(api: Api, args: argparse.Namespace, as_json: bool) -> None:
    """``edgeprint dead-letter``: DEAD jobs, oldest first, with why."""
    query = {k: v for k, v in (("limit", args.limit), ("cursor", args.cursor)) if v is not None}
    raw, body = api.json("GET", "/v1/dead-letter", {k: str(v) for k, v in query.items()})
    if as_json:
        _emit_raw(raw)
        return
    now = datetime.now(UTC)
    jobs = body.get("jobs", [])
    lines = [f"dead-letter queue: {body.get('count', len(jobs))} job(s)"]
    if jobs:
        rows = [
            [
                j["id"], j.get("dead_reason") or "-",
                _trim(j.get("printed_on") or j.get("printer") or j.get("pool") or "-", 14),
                str(j.get("attempts", "")), _ago(j.get("updated_at"), now),
            ]
            for j in jobs
        ]  # fmt: skip
        table = _table(["ID", "REASON", "WHERE", "ATT", "DEAD FOR"], rows, right={3, 4})
        lines += ["", table[0]]
        for job, line in zip(jobs, table[1:], strict=True):
            lines.append(line)
            extra = f"owner {job.get('owner')}"
            if job.get("last_error"):
                extra += f"; last error: {job['last_error']}"
            lines += _wrap(extra)
        if any(j.get("dead_reason") == "outcome_unknown" for j in jobs):
            lines += [
                "",
                "outcome_unknown: it may have printed. Look at the printer's tray, then",
                "  edgeprint resolve JOB_ID --printed      (it came out: DONE)",
                "  edgeprint resolve JOB_ID --not-printed  (it did not: print it once more)",
            ]
        lines += ["", "replay one (once; prints it again): edgeprint replay JOB_ID"]
    if body.get("next_cursor"):
        lines.append(f"more: add --cursor {body['next_cursor']}")
    _out([_clean(line) for line in lines])


def cmd_replay(api: Api, args: argparse.Namespace, as_json: bool) -> None:
    """``edgeprint replay JOB_ID``: DEAD → RELEASED."""
    raw, job = api.json("POST", f"/v1/jobs/{args.job_id}/replay")
    if as_json:
        _emit_raw(raw)
        return
    where = job.get("printer") or (f"pool {job['pool']}" if job.get("pool") else "-")
    _out([_clean(f"replayed {job['id']}: now {job['state']}, waiting for {where}")])


def cmd_stats(api: Api, args: argparse.Namespace, as_json: bool) -> None:
    """``edgeprint stats``: jobs by state, dead letters by reason, printers in short."""
    raw, body = api.json("GET", "/v1/stats")
    if as_json:
        _emit_raw(raw)
        return
    counts = body.get("jobs_by_state", {})
    lines = _wrap("  ".join(f"{s} {counts.get(s, 0)}" for s in counts), "JOBS  ", "      ")
    reasons = body.get("dead_letters_by_reason", {})
    dead = "  ".join(f"{r} {n}" for r, n in reasons.items()) or "none"
    lines += _wrap(f"{body.get('dead_letters', 0)} ({dead})", "DEAD  ", "      ")
    rows = [
        [
            p["name"], _trim(p.get("pool") or "-", 12),
            "paused" if p.get("paused") else ("healthy" if p.get("healthy") else "unhealthy"),
            str(p.get("waiting", 0)), _age(p.get("oldest_waiting_s")),
            _short(p.get("printing_job"), True),
        ]
        for p in body.get("printers", [])
    ]  # fmt: skip
    if rows:
        header = ["PRINTER", "POOL", "HEALTH", "WAITING", "OLDEST", "PRINTING"]
        lines += ["", *_table(header, rows, right={3, 4})]
    for pool in body.get("pools", []):
        lines.append(
            f"pool {pool['name']}: {pool.get('waiting', 0)} waiting, oldest "
            f"{_age(pool.get('oldest_waiting_s'))}"
        )
    _out([_clean(line) for line in lines])


def cmd_identify(api: Api, args: argparse.Namespace, as_json: bool) -> None:
    """``edgeprint identify PRINTER [--test-page]``."""
    how = "test-page" if args.test_page else "auto"
    raw, body = api.json("POST", f"/v1/printers/{args.printer}/identify", json_body={"how": how})
    if as_json:
        _emit_raw(raw)
        return
    if body.get("action") == "identify-printer":
        line = f"{body['printer']}: Identify-Printer sent (it shows, flashes or sounds)"
    else:
        line = f"{body['printer']}: test page sent (printer job-id {body.get('printer_job_id')})"
    _out([_clean(line)])


def cmd_resolve(api: Api, args: argparse.Namespace, as_json: bool) -> None:
    """``edgeprint resolve JOB_ID --printed|--not-printed``."""
    raw, job = api.json(
        "POST", f"/v1/jobs/{args.job_id}/resolve", json_body={"printed": args.printed}
    )
    if as_json:
        _emit_raw(raw)
        return
    said = "printed" if args.printed else "not printed"
    _out([_clean(f"resolved {job['id']}: {said}, now {job['state']}")])


def _printer_action(verb: str) -> Callable[[Api, argparse.Namespace, bool], None]:
    def run(api: Api, args: argparse.Namespace, as_json: bool) -> None:
        raw, body = api.json("POST", f"/v1/printers/{args.printer}/{verb}")
        if as_json:
            _emit_raw(raw)
            return
        printer = body["printer"] if verb == "drain" else body
        state = "paused" if printer.get("paused") else "not paused (takes work)"
        lines = [
            f"{printer['name']}: {state}; health {_health(printer)}; "
            f"{printer.get('waiting', 0)} job(s) waiting for it by name"
        ]
        if verb == "drain":
            moved = body.get("moved", [])
            pool = printer.get("pool")
            lines.append(
                f"moved {len(moved)} waiting job(s) to pool {pool}" if pool
                else f"moved {len(moved)} waiting job(s)"
            )  # fmt: skip
            lines += [f"  {m}" for m in moved]
        _out([_clean(line) for line in lines])

    run.__doc__ = f"``edgeprint {verb} PRINTER``."
    return run


COMMANDS: dict[str, Callable[[Api, argparse.Namespace, bool], None]] = {
    "status": cmd_status,
    "printers": cmd_printers,
    "jobs": cmd_jobs,
    "dead-letter": cmd_dead_letter,
    "replay": cmd_replay,
    "resolve": cmd_resolve,
    "stats": cmd_stats,
    "identify": cmd_identify,
    "pause": _printer_action("pause"),
    "resume": _printer_action("resume"),
    "drain": _printer_action("drain"),
}


# --- text helpers ---------------------------------------------------------------------------


def _table(
    headers: list[str], rows: list[list[str]], right: Collection[int] = frozenset()
) -> list[str]:
    """Fixed columns as wide as their widest cell; two spaces apart, one if that fits 80."""
    cells = [[_clean(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    sep = "  " if sum(widths) + 2 * (len(widths) - 1) <= WIDTH else " "

    def fmt(row: list[str]) -> str:
        padded = (
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        )
        return sep.join(padded).rstrip()

    return [fmt(headers), *(fmt(r) for r in cells)]


def _wrap(text: str, indent: str = "  ", subsequent: str = "    ") -> list[str]:
    """``text`` folded to 80 columns (never at a hyphen: printer names and reasons have them)."""
    return textwrap.wrap(
        _clean(text), WIDTH, initial_indent=indent, subsequent_indent=subsequent,
        break_on_hyphens=False,
    ) or [indent.rstrip()]  # fmt: skip


def _clean(text: str) -> str:
    """No terminal control sequences from data (a printer's message, an owner)."""
    return _CONTROL_RE.sub("?", text)


def _trim(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "~"


def _short(job_id: str | None, short: bool) -> str:
    if not job_id:
        return "-"
    return job_id[:8] if short else job_id


def _num(value: int | None) -> str:
    return "-" if value is None else str(value)


def _yes(value: object) -> str:
    return "yes" if value else "no"


def _age(seconds: float | None) -> str:
    """``7s``, ``4m05s``, ``2h10m``, ``3d04h``; ``-`` for none."""
    if seconds is None:
        return "-"
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def _ago(iso: str | None, now: datetime) -> str:
    if not iso:
        return "-"
    try:
        then = datetime.fromisoformat(iso)
    except ValueError:
        return "-"
    return _age((now - then).total_seconds())
