"""``edgeprint``: parse the command line and run the command; the appliance's own commands
(serve, check-config, token new) live here, the technicians' (and ``token list``) in
:mod:`edgeprint.cli.tech`.
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import Sequence

from edgeprint.cli import discover, parser, setup, tech, tls
from edgeprint.cli.errors import EXIT_OK, EXIT_USAGE
from edgeprint.logs import log_event


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version (0) and usage errors (2)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    if args.command == "check-config":
        return _check_config(args.path)
    if args.command == "token" and args.token_command == "new":
        return _token_new(args.role, args.name)
    if args.command == "serve":
        return _serve(args.config, args.log_level)
    if args.command == "discover":
        return discover.run(args)
    if args.command == "setup":
        return setup.run(args)
    if args.command == "tls":
        return tls.run(args)
    return tech.run(args)


def _check_config(path: str) -> int:
    from edgeprint import errors
    from edgeprint.config import load_config

    try:
        cfg = load_config(path)
    except errors.ConfigError as exc:
        print(exc, file=sys.stderr)
        return EXIT_USAGE
    from edgeprint.config_checks import problems, unresolved_hosts, warnings

    errors_found = problems(cfg)
    for line in errors_found:
        print(f"error: {line}", file=sys.stderr)
    if errors_found:
        return EXIT_USAGE
    print(
        f"ok: {len(cfg.printers)} printer(s), {len(cfg.pools)} pool(s), "
        f"{len(cfg.tokens)} token(s); data_dir {cfg.server.data_dir}; "
        f"listening on {cfg.server.host}:{cfg.server.port}"
    )
    for line in warnings(cfg) + unresolved_hosts(cfg):
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
    if role == "station":
        print('printers = ["printer-01"]  # the printers and pools this station stands at')
    print("# expires = 2027-01-31T23:59:59Z  # optional (RFC 3339): refused from then on")
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
        log_event(
            logging.getLogger("edgeprint"),
            "config_warning",
            message=line,
            level=logging.WARNING,
            key=line.split(":", 1)[0],
        )
    from edgeprint.certificates import CertificateError
    from edgeprint.server import serve  # the server stack is not needed for other commands

    try:
        asyncio.run(serve(cfg, pathlib.Path(config_path)))
    except CertificateError as exc:  # logged by the server too
        print(f"edgeprint: cannot serve TLS: {exc.path}: {exc.reason}", file=sys.stderr)
        return 1
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
