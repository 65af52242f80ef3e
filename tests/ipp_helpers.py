"""Raw IPP requests for tests (pyipp encodes and parses; aiohttp carries), TCP or Unix socket.

The appliance's own client (edgeprint/printers/ipp.py) is the code under test
elsewhere; these helpers only ask real printers what they say, with no
classification in between.
"""

from __future__ import annotations

import io
import itertools
from collections.abc import Sequence
from typing import Any

import aiohttp
from pyipp.enums import IppOperation
from pyipp.parser import parse as parse_ipp
from pyipp.serializer import encode_dict

from edgeprint.documents.capabilities import REQUESTED_ATTRIBUTES

_ids = itertools.count(1)
_HEADERS = {"Content-Type": "application/ipp"}


def _request(op: IppOperation, printer_uri: str, **operation: Any) -> bytes:
    encoded: bytes = encode_dict({
        "version": (2, 0),
        "operation": op,
        "request-id": next(_ids),
        "operation-attributes-tag": {
            "attributes-charset": "utf-8",
            "attributes-natural-language": "en",
            "printer-uri": printer_uri,
            **operation,
        },
    })  # fmt: skip
    return encoded


async def _post(url: str, body: bytes, unix_socket: str | None, ssl: Any = True) -> dict[str, Any]:
    connector = aiohttp.UnixConnector(path=unix_socket) if unix_socket else None
    async with (
        aiohttp.ClientSession(connector=connector) as session,
        session.post(url, data=io.BytesIO(body), headers=_HEADERS, ssl=ssl) as resp,
    ):
        assert resp.status == 200, f"HTTP {resp.status} from {url}"
        parsed: dict[str, Any] = parse_ipp(await resp.read())
        return parsed


def http_url(printer_uri: str) -> str:
    return printer_uri.replace("ipps://", "https://", 1).replace("ipp://", "http://", 1)


async def printer_attributes(
    printer_uri: str,
    requested: Sequence[str] = REQUESTED_ATTRIBUTES,
    *,
    unix_socket: str | None = None,
    ssl: Any = True,
) -> dict[str, Any]:
    """The printer's attribute group as pyipp parses it (Get-Printer-Attributes).

    ``ssl`` is aiohttp's (an ``aiohttp.Fingerprint`` for a pinned ipps printer).
    """
    body = _request(
        IppOperation.GET_PRINTER_ATTRIBUTES,
        printer_uri,
        **{"requested-attributes": list(requested)},
    )
    parsed = await _post(http_url(printer_uri), body, unix_socket, ssl)
    assert parsed["status-code"] < 0x100, f"status 0x{parsed['status-code']:04x}"
    attrs: dict[str, Any] = parsed["printers"][0]
    return attrs


async def print_job(
    printer_uri: str,
    document: bytes,
    document_format: str,
    job_name: str = "edgeprint-test",
    *,
    unix_socket: str | None = None,
) -> dict[str, Any]:
    """Print-Job; the parsed answer (status-code, jobs[0]…)."""
    body = _request(
        IppOperation.PRINT_JOB,
        printer_uri,
        **{
            "requesting-user-name": "edgeprint",
            "job-name": job_name,
            "document-format": document_format,
        },
    )
    return await _post(http_url(printer_uri), body + document, unix_socket)
