"""The appliance's local API over HTTP, with the standard library (fast start, no event loop).

Where the API is (``--url``, ``--config``, ``$EDGEPRINT_URL``, the default) and
which token to send (``--token``, ``$EDGEPRINT_TOKEN``); an error answer becomes
one line naming the status and the problem's ``detail``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass
from http.client import HTTPException
from typing import IO, Any

from edgeprint import __version__
from edgeprint.cli.errors import ApiFailed, ConnectFailed, UsageError
from edgeprint.cli.render import clean

DEFAULT_URL = "http://127.0.0.1:8631"
URL_ENV = "EDGEPRINT_URL"
TOKEN_ENV = "EDGEPRINT_TOKEN"
DEFAULT_TIMEOUT_S = 10.0
#: A bearer token as it may travel in a header: printable ASCII, no spaces.
_TOKEN_RE = re.compile(r"^[\x21-\x7e]{1,4096}$")


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
        json_body: object = None, body: tuple[bytes, str] | None = None,
        extra_headers: dict[str, str] | None = None,
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
        if body is not None:
            data, headers["Content-Type"] = body
        headers.update(extra_headers or {})
        req = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with self._opener.open(req, timeout=self.timeout_s) as resp:
                answer: bytes = resp.read()
                return answer
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

    def submit(self, metadata: dict[str, Any], pdf: bytes, key: str) -> Any:
        """POST /v1/jobs (multipart: ``metadata`` JSON and the PDF ``document``); the job."""
        boundary = f"edgeprint-{uuid.uuid4().hex}"
        parts = [
            ("metadata", "application/json", None, json.dumps(metadata).encode()),
            ("document", "application/pdf", "badge.pdf", pdf),
        ]
        out = bytearray()
        for name, ctype, filename, value in parts:
            disposition = f'form-data; name="{name}"' + (
                f'; filename="{filename}"' if filename else ""
            )
            out += (
                f"--{boundary}\r\nContent-Disposition: {disposition}\r\n"
                f"Content-Type: {ctype}\r\n\r\n"
            ).encode()
            out += value + b"\r\n"
        out += f"--{boundary}--\r\n".encode()
        raw = self.call(
            "POST", "/v1/jobs", body=(bytes(out), f"multipart/form-data; boundary={boundary}"),
            extra_headers={"Idempotency-Key": key},
        )  # fmt: skip
        try:
            return json.loads(raw)
        except ValueError:
            raise ApiFailed(200, "the answer to POST /v1/jobs is not JSON", raw) from None

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
    return clean(f"{status} {title}: {detail or 'no detail given'}{hint}")


def base_url(args: argparse.Namespace) -> str:
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


def bearer_token(args: argparse.Namespace) -> str | None:
    """The token from --token or $EDGEPRINT_TOKEN (None: neither); raises UsageError."""
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
