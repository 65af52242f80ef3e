"""``edgeprint setup``: write a working config — printers, a kiosk and a tech token, the host.

Printers come from ``--printer NAME=URI`` (repeatable), from discovery with
``--discovered``, or, in a terminal, from a choice among the printers discovery finds.
The tokens are printed once on stdout (only their SHA-256 is stored) and never logged.
An existing config that configures anything is only replaced with ``--force``.

Exit codes: 0 written; 2 bad usage, nothing written (the message says why).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import re
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from edgeprint.cli.credentials import TOKEN_FILE_NAME
from edgeprint.cli.discover import seconds_arg
from edgeprint.cli.errors import EXIT_OK, EXIT_USAGE
from edgeprint.cli.render import clean
from edgeprint.config import NAME_PATTERN

if TYPE_CHECKING:
    from edgeprint.printers.discover import FoundPrinter
    from edgeprint.setup import Address, StagedCertificate

PROBE_TIMEOUT_S = 3.0
DEFAULT_POOL = "lobby"
_NAME_RE = re.compile(NAME_PATTERN)


class SetupError(Exception):
    """Setup cannot go on; nothing was written (exit 2)."""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``setup`` on the ``edgeprint`` command's subparsers."""
    from edgeprint.setup import DEFAULT_CONFIG, DEFAULT_DATA_DIR, DEFAULT_PORT

    s = sub.add_parser(
        "setup",
        help="write a working config: printers, a kiosk and a tech token, the listen address",
        description="Write a working config. Printers: --printer NAME=URI, --discovered, or "
        "(in a terminal) a choice among those discovery finds. A kiosk and a tech token are "
        "made and shown once; only their SHA-256 is stored.",
    )
    s.add_argument(
        "--printer",
        dest="printers",
        action="append",
        default=[],
        type=_printer_arg,
        metavar="NAME=URI",
        help="a printer (repeatable), e.g. lobby-1=ipp://192.0.2.7/ipp/print",
    )
    s.add_argument(
        "--discovered",
        action="store_true",
        help="use every printer discovery finds, without asking",
    )
    s.add_argument("--pool", type=_name_arg, help="put every printer in this pool")
    s.add_argument(
        "--host",
        help="address the API listens on (default: this machine's LAN address that "
        "reaches the printers)",
    )
    s.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"default {DEFAULT_PORT}")
    s.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR, metavar="DIR")
    s.add_argument(
        "--config",
        dest="setup_config",
        type=Path,
        default=DEFAULT_CONFIG,
        metavar="PATH",
        help=f"the file to write (default {DEFAULT_CONFIG})",
    )
    s.add_argument("--force", action="store_true", help="replace a config that is in use")
    s.add_argument(
        "--new-certificate",
        action="store_true",
        help="make a new TLS key and certificate even when a valid one is there (kiosks must "
        "then pin the new key; without it --force keeps the certificate and its pin)",
    )
    s.add_argument(
        "--no-token-file",
        action="store_true",
        help=f"do not write the tech token to {TOKEN_FILE_NAME} next to the config (readable "
        "by root only; the CLI on this box reads it)",
    )
    s.add_argument(
        "--timeout",
        dest="browse_s",
        type=seconds_arg,
        default=3.0,
        metavar="SECONDS",
        help="how long discovery listens (default 3)",
    )
    s.add_argument(
        "--interface",
        dest="interfaces",
        action="append",
        metavar="ADDRESS",
        help="discover only on the interface with this IPv4 address (repeatable; default all)",
    )


def _name_arg(text: str) -> str:
    if not _NAME_RE.fullmatch(text):
        raise argparse.ArgumentTypeError(
            f"{text!r}: a name is 1-40 lowercase letters, digits and '-'"
        )
    return text


def _printer_arg(text: str) -> tuple[str, str]:
    name, sep, uri = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(
            f"{text!r}: write NAME=URI, e.g. lobby-1=ipp://ADDRESS/ipp/print"
        )
    return _name_arg(name), uri


def run(args: argparse.Namespace, ask: Callable[[str], str] = input) -> int:
    """The ``setup`` command."""
    try:
        return _run(args, ask)
    except SetupError as exc:
        print(f"edgeprint setup: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (EOFError, KeyboardInterrupt):
        print("\nedgeprint setup: stopped; nothing written", file=sys.stderr)
        return EXIT_USAGE


def _run(args: argparse.Namespace, ask: Callable[[str], str]) -> int:
    from edgeprint import errors, setup
    from edgeprint.config_checks import warnings

    path: Path = args.setup_config
    why = setup.refusal(path)
    if why and not args.force:
        raise SetupError(f"{why}; nothing written. --force replaces it (its tokens stop working)")

    interactive = sys.stdin.isatty() and not args.printers and not args.discovered
    printers: list[tuple[str, str]] = list(args.printers)
    pool: str | None = args.pool
    if args.discovered or interactive:
        found = _discover(args.browse_s, args.interfaces)
        if interactive:
            printers = _choose(found, ask)
            if pool is None and len(printers) > 1:
                pool = _ask_pool(ask)
        else:
            printers = _all(found)
    if not printers:
        raise SetupError(
            "no printers; nothing written. Give --printer NAME=URI (edgeprint discover lists "
            "the printers on the LAN), --discovered, or run edgeprint setup in a terminal"
        )

    addresses = setup.local_addresses()
    host = args.host or setup.choose_host([u for _, u in printers], addresses)
    problem = setup.check_host(host, addresses)
    if problem:
        raise SetupError(f"{problem}; nothing written")

    tokens = [setup.new_token("kiosk-1", "kiosk"), setup.new_token("tech-1", "tech")]
    try:
        text, cfg = setup.build(
            printers=printers,
            pool=pool,
            host=host,
            port=args.port,
            data_dir=args.data_dir,
            tokens=tokens,
            now=datetime.now(UTC),
            config_path=path,
        )
    except errors.ConfigError as exc:
        raise SetupError(f"{exc}\nnothing written") from None

    for line in _probe(printers):
        print(line, file=sys.stderr)
    cert = _certificate(path.parent, setup.certificate_names(host, addresses), args.new_certificate)
    token_path = None if args.no_token_file else path.parent / TOKEN_FILE_NAME
    try:
        if not _write(path, text, token_path, tokens[1].secret):
            token_path = None
    except BaseException:
        setup.discard_certificate(cert)
        raise
    try:
        setup.commit_certificate(cert)
    except OSError as exc:
        setup.discard_certificate(cert)
        raise SetupError(f"cannot write {cert.certificate.cert_file}: {exc.strerror}") from None

    print(f"Wrote {path}: {len(cfg.printers)} printer(s)" + (f" in pool {pool!r}" if pool else ""))
    print(setup.host_note(host, args.port, addresses))
    print()
    for line in tls_lines(cert, host, args.port, addresses):
        print(line, file=sys.stderr if line.startswith("warning:") else sys.stdout)
    print()
    print("Bearer tokens, shown this once (only their SHA-256 is in the config; a lost token")
    print("is replaced with: edgeprint setup --force, or edgeprint token new):")
    for t in tokens:
        print(f"  {t.role} token ({t.name}): {t.secret}")
    if token_path is not None:
        print(f"The tech token is also in {token_path} (readable by root only): {_found(path)}")
    print()
    if path == setup.DEFAULT_CONFIG:
        print("Next: systemctl enable --now edgeprint   (or: systemctl restart edgeprint)")
    else:
        print(f"Next: edgeprint serve --config {path}")
    for line in warnings(cfg):
        print(f"warning: {line}", file=sys.stderr)
    return EXIT_OK


def _found(path: Path) -> str:
    """How the edgeprint command finds this config and its token: by itself only at a
    path it looks in (cli/locate.py), else named (fresh-user finding 13)."""
    from edgeprint.cli import locate

    if path in locate.CONFIG_CANDIDATES and path.is_absolute():
        return (
            "the edgeprint command on this box finds the appliance and this token by itself "
            "(sudo edgeprint status)."
        )
    return (
        f"the edgeprint command finds them when given this config (edgeprint status --config "
        f"{path}), not by itself (it looks in {', '.join(map(str, locate.CONFIG_CANDIDATES))})."
    )


def _certificate(folder: Path, names: list[str], renew: bool) -> StagedCertificate:
    from edgeprint import setup

    try:
        return setup.prepare_certificate(folder, names, renew=renew, now=datetime.now(UTC))
    except OSError as exc:
        raise SetupError(f"cannot write the TLS certificate in {folder}: {exc.strerror}") from None


def tls_lines(cert: StagedCertificate, host: str, port: int, addresses: list[Address]) -> list[str]:
    """What setup says of the certificate: kept or new, and what kiosks pin."""
    from edgeprint import setup
    from edgeprint.cli.locate import reach_host

    c = cert.certificate
    url = setup.https_url(host, port, addresses)
    state = "new" if cert.staged else "kept: the kiosks' pins still hold"
    lines = [
        f"TLS: the API and the IPP queues are served over https:// and ipps:// only, with a "
        f"self-signed certificate ({c.cert_file}, {state}; valid until {c.not_after:%Y-%m-%d}).",
    ]
    if cert.replaced_because:
        lines.append(f"  (the certificate there was replaced: {cert.replaced_because})")
    lines += [
        "Kiosks pin it (edgeprint tls fingerprint shows it again):",
        f"  SHA-256 fingerprint: {c.fingerprint}",
        f"  public key pin:      {c.pin}",
        f"  e.g. curl --insecure --pinnedpubkey '{c.pin}' {setup.https_url(host, port, addresses)}"
        "/healthz   (--insecure skips the CA check; the pin is checked instead)",
        f"  names: {', '.join(c.names)}",
        "  the README's pinning examples read them as:",
        f"    export EDGEPRINT_URL={url} EDGEPRINT_HOST={url.removeprefix('https://')}",
        f"    export EDGEPRINT_PIN='{c.pin}'",
        f"    export EDGEPRINT_FINGERPRINT='{c.fingerprint}'",
    ]
    reach = reach_host(host)
    if host not in setup.WILDCARDS and reach not in c.names:
        lines.append(
            f"warning: the kept certificate does not name {reach}: clients that check names "
            "(not pins) refuse it; --new-certificate makes one that does (kiosks then pin the "
            "new key)"
        )
    return lines


def _write(path: Path, text: str, token_path: Path | None, tech_token: str) -> bool:
    """The config and (``token_path`` not None) the tech token file, staged first so a
    failure leaves neither; True when the token file was written."""
    from edgeprint import setup

    staged = None
    try:
        if token_path is not None:
            try:
                staged = setup.stage_secret(token_path, tech_token + "\n")
            except OSError as exc:
                raise SetupError(f"cannot write {token_path}: {exc.strerror or exc}") from None
        try:
            setup.write(path, text)
        except OSError as exc:
            raise SetupError(f"cannot write {path}: {exc.strerror or exc}") from None
        if staged is not None and token_path is not None:
            try:
                setup.commit_secret(staged, token_path)
            except OSError as exc:  # the config is in place: the tokens must still be shown
                print(
                    f"warning: cannot write {token_path}: {exc.strerror or exc}; keep the "
                    "tech token shown below",
                    file=sys.stderr,
                )
                return False
            staged = None
        return token_path is not None
    finally:
        if staged is not None:
            with contextlib.suppress(OSError):
                staged.unlink()


def _discover(browse_s: float, interfaces: list[str] | None) -> list[FoundPrinter]:
    from edgeprint.printers import discover

    print(f"Looking for IPP printers on the LAN ({browse_s:g} s)…", file=sys.stderr)
    return asyncio.run(discover.discover(browse_s, interfaces))


def _all(found: list[FoundPrinter]) -> list[tuple[str, str]]:
    from edgeprint.printers.discover import config_name

    out: list[tuple[str, str]] = []
    for p in _unique(found):
        out.append((config_name(p.instance, [n for n, _ in out]), p.uri))
    return out


def _unique(found: list[FoundPrinter]) -> list[FoundPrinter]:
    """One entry per printer: ipp is preferred where a printer advertises ipp and ipps."""
    seen: dict[str, FoundPrinter] = {}
    for p in sorted(found, key=lambda p: p.service):  # _ipp before _ipps
        seen.setdefault(p.instance, p)
    return sorted(seen.values(), key=lambda p: p.instance)


def _choose(found: list[FoundPrinter], ask: Callable[[str], str]) -> list[tuple[str, str]]:
    from edgeprint.printers.discover import config_name

    listed = _unique(found)
    chosen: list[tuple[str, str]] = []
    if listed:
        print(f"{len(listed)} printer(s) found:")
        for i, p in enumerate(listed, 1):
            about = p.error or f"{p.make_and_model or '?'}, {p.state or '?'}"
            print(f"  {i}  {clean(p.instance)}  {clean(p.uri)}  ({clean(about)})")
        while True:
            answer = ask('Printers to use (numbers like "1 3", "a" for all, Enter for none): ')
            picked = _pick(answer, len(listed))
            if picked is not None:
                break
            print(f"  numbers from 1 to {len(listed)}, separated by spaces")
        for i in picked:
            chosen.append((config_name(listed[i].instance, [n for n, _ in chosen]), listed[i].uri))
    else:
        print("No printer answered discovery.")
    while True:
        uri = ask("Add a printer by URI (ipp://ADDRESS/ipp/print), or Enter to finish: ").strip()
        if not uri:
            return chosen
        name = ask("  its name (a-z, 0-9, -): ").strip()
        if not _NAME_RE.fullmatch(name) or name in {n for n, _ in chosen}:
            print("  a new name of 1-40 lowercase letters, digits and '-'")
            continue
        chosen.append((name, uri))


def _pick(answer: str, n: int) -> list[int] | None:
    words = answer.replace(",", " ").split()
    if words == ["a"]:
        return list(range(n))
    if not all(w.isdigit() and 1 <= int(w) <= n for w in words):
        return None
    return sorted({int(w) - 1 for w in words})


def _ask_pool(ask: Callable[[str], str]) -> str | None:
    while True:
        answer = ask(f'Pool for these printers (Enter for "{DEFAULT_POOL}", "-" for none): ')
        answer = answer.strip() or DEFAULT_POOL
        if answer == "-":
            return None
        if _NAME_RE.fullmatch(answer):
            return answer
        print("  1-40 lowercase letters, digits and '-'")


def _probe(printers: list[tuple[str, str]]) -> list[str]:
    """One line per printer that does not answer Get-Printer-Attributes (it is written anyway:
    it may be off during setup)."""
    import aiohttp

    from edgeprint import errors
    from edgeprint.printers.ipp import IppClient

    async def ask_all() -> list[str]:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False)) as http:

            async def one(name: str, uri: str) -> str | None:
                try:
                    await IppClient(
                        uri, http, request_timeout_s=PROBE_TIMEOUT_S
                    ).get_printer_attributes()
                except errors.PrinterError as exc:
                    return (
                        f"warning: printer {name} ({uri}) does not answer: {exc.detail}; "
                        "written anyway — check the address and that the printer is on "
                        "(edgeprint discover lists the printers that answer)"
                    )
                return None

            results = await asyncio.gather(*(one(n, u) for n, u in printers))
            return [r for r in results if r]

    return asyncio.run(ask_all())
