"""``edgeprint discover``: the IPP printers on the LAN, as a technician reads them or as JSON.

Exit codes: 0 printers found; 1 none answered (the message says what to check).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from edgeprint.cli.errors import EXIT_OK
from edgeprint.cli.render import clean

if TYPE_CHECKING:  # zeroconf and aiohttp load only when the command runs
    from edgeprint.printers import discover

DEFAULT_TIMEOUT_S = 3.0
EXIT_NONE_FOUND = 1


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``discover`` on the ``edgeprint`` command's subparsers."""
    d = sub.add_parser(
        "discover",
        help="list the IPP printers on the LAN (DNS-SD) with what each says about itself",
        description="Browse DNS-SD (_ipp._tcp, _ipps._tcp) and ask each printer found for "
        "its make and model, state, formats and media ready (Get-Printer-Attributes).",
    )
    d.add_argument(
        "--timeout",
        dest="browse_s",
        type=seconds_arg,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"how long to listen for printers (default {DEFAULT_TIMEOUT_S:g})",
    )
    d.add_argument(
        "--interface",
        dest="interfaces",
        action="append",
        metavar="ADDRESS",
        help="browse only on the interface with this IPv4 address (repeatable; default all)",
    )
    d.add_argument("--json", dest="as_json", action="store_true", help="print JSON")


def seconds_arg(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value <= 120:
        raise argparse.ArgumentTypeError("must be more than 0 and at most 120")
    return value


def run(args: argparse.Namespace) -> int:
    """The ``discover`` command."""
    from edgeprint.printers import discover

    found = asyncio.run(discover.discover(args.browse_s, args.interfaces))
    if args.as_json:
        json.dump({"printers": [p.as_json() for p in found]}, sys.stdout, indent=2)
        print()
    elif found:
        print("\n".join(render(found)))
    if not found:
        print(nothing_found(args.browse_s), file=sys.stderr)
        return EXIT_NONE_FOUND
    return EXIT_OK


def nothing_found(browse_s: float) -> str:
    """What to check when no printer answered."""
    return (
        f"edgeprint discover: no IPP printer answered within {browse_s:g} s "
        "(DNS-SD _ipp._tcp and _ipps._tcp). Check that the printers are on and on this "
        "network, that multicast DNS (UDP port 5353) is not filtered, or try a longer "
        "--timeout. A printer that does not advertise itself can still be added by its "
        "URI: edgeprint setup --printer NAME=ipp://ADDRESS/ipp/print"
    )


def render(found: Sequence[discover.FoundPrinter]) -> list[str]:
    """The technician's view: one block per printer, then how to add them."""
    if not found:
        return []
    lines = [f"{len(found)} printer(s) found:", ""]
    for p in found:
        lines.append(f"{clean(p.instance)}  ({p.service})")
        lines.append(f"  uri      {clean(p.uri)}")
        lines.append(f"  model    {clean(p.make_and_model or '?')}")
        if p.error:
            lines.append(f"  error    {clean(p.error)}")
        else:
            state = p.state or "?"
            if p.state_reasons:
                state += f" ({', '.join(clean(r) for r in p.state_reasons)})"
            lines.append(f"  state    {state}")
            lines.append(f"  formats  {clean(', '.join(p.formats)) or '?'}")
            lines.append(f"  media    {clean(', '.join(p.media_ready)) or '?'}")
        lines.append("")
    lines.append("Use them: edgeprint setup (asks which), or edgeprint setup --printer NAME=URI")
    return lines
