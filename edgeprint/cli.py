"""The ``edgeprint`` command: serve, check-config, token new.

Exit codes: 0 ok, 1 runtime failure, 2 bad usage or bad config.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import sys
from collections.abc import Sequence

from edgeprint import __version__, errors, logs
from edgeprint.api.auth import token_digest
from edgeprint.config import Config, load_config


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="edgeprint", description="edgeprint print-job appliance")
    p.add_argument("--version", action="version", version=f"edgeprint {__version__}")
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
    return p


def _summary(cfg: Config) -> str:
    return (
        f"ok: {len(cfg.printers)} printer(s), {len(cfg.pools)} pool(s), "
        f"{len(cfg.tokens)} token(s); data_dir {cfg.server.data_dir}; "
        f"listening on {cfg.server.host}:{cfg.server.port}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    args = _parser().parse_args(argv)
    if args.command == "check-config":
        try:
            cfg = load_config(args.path)
        except errors.ConfigError as exc:
            print(exc, file=sys.stderr)
            return 2
        print(_summary(cfg))
        return 0
    if args.command == "token":
        token = secrets.token_urlsafe(32)
        name = args.name or f"{args.role}-{secrets.token_hex(3)}"
        print(f"# bearer token (shown once; give it to the {args.role}):")
        print(f"# {token}")
        print("[[tokens]]")
        print(f'name = "{name}"')
        print(f'role = "{args.role}"')
        print(f'sha256 = "{token_digest(token)}"')
        return 0
    # serve
    logs.configure(args.log_level)
    try:
        cfg = load_config(args.config)
    except errors.ConfigError as exc:
        print(exc, file=sys.stderr)
        return 2
    from edgeprint.server import serve  # the server stack is not needed for other commands

    try:
        asyncio.run(serve(cfg))
    except errors.StoreError as exc:
        print(f"edgeprint: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"edgeprint: cannot start: {exc}", file=sys.stderr)
        return 1
    return 0
