"""The appliance's local API over HTTP, with the standard library (fast start, no event loop).

Where the API is comes from :mod:`edgeprint.cli.locate`, the token from
:mod:`edgeprint.cli.credentials`; both say where they came from, so an error can
name it. An error answer becomes one line naming the status and the problem's
``detail``.
"""

from __future__ import annotations

import argparse
import json
import socket
import ssl
import sys
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass
from http.client import HTTPException
from typing import IO, Any

from edgeprint import __version__
from edgeprint.cli import credentials, locate
from edgeprint.cli import trust as tls_trust
from edgeprint.cli.errors import ApiFailed, ConnectFailed, UsageError
from edgeprint.cli.render import clean

DEFAULT_URL = locate.DEFAULT_URL
URL_ENV = locate.URL_ENV
TOKEN_ENV = credentials.TOKEN_ENV
TOKEN_FILE_ENV = credentials.TOKEN_FILE_ENV
DEFAULT_TIMEOUT_S = 10.0
#: What to try when the appliance does not answer.
_TRY = "is the appliance running? systemctl status edgeprint; or pass --url or --config"


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is an error: following it would hand the bearer token to another URL."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: Any,
        newurl: str,
    ) -> urllib.request.Request | None:
        return None


@dataclass
class Api:
    """The appliance's API at ``base`` (no trailing slash).

    ``where`` says where ``base`` came from and ``token_from`` where the token did, for
    the error messages (a refused connection names both the URL and its source).
    """

    base: str
    token: str | None
    timeout_s: float = DEFAULT_TIMEOUT_S
    where: locate.Where | None = None
    token_from: str | None = None
    #: How an https:// appliance is trusted (None: the system CAs); cli/trust.py.
    trust: tls_trust.Trust | None = None

    def __post_init__(self) -> None:
        # No proxies (the API is local; *_proxy variables must not reroute the token),
        # no redirects; https:// checks the pin before the request is sent.
        handlers: list[urllib.request.BaseHandler] = [
            urllib.request.ProxyHandler({}),
            _NoRedirects(),
        ]
        if self.base.startswith("https://"):
            handlers.append((self.trust or tls_trust.Trust(None)).handler(self.base))
        self._opener = urllib.request.build_opener(*handlers)

    def call(
        self,
        method: str,
        path: str,
        query: dict[str, str] | None = None,
        *,
        auth: bool = True,
        json_body: object = None,
        body: tuple[bytes, str] | None = None,
        extra_headers: dict[str, str] | None = None,
    ) -> bytes:
        """The response body of a 2xx; raises ApiFailed, ConnectFailed or UsageError."""
        url = self.base + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        headers = {"Accept": "application/json", "User-Agent": f"edgeprint-cli/{__version__}"}
        if auth:
            if not self.token:
                self._no_token()
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
            if exc.code == 404 and not _problem_slug(raw):
                raise ConnectFailed(self._stranger(f"{exc.code} {exc.reason}", path)) from None
            if _to_https(self.base, exc):
                raise ConnectFailed(self._tls_port()) from None
            message = _problem_message(exc.code, exc.reason, raw) + self._hint(exc.code, raw)
            raise ApiFailed(exc.code, clean(message), raw) from None
        except urllib.error.URLError as exc:
            if _plain_http(exc.reason):
                raise ConnectFailed(self._plain_http()) from None
            if isinstance(exc.reason, ssl.SSLCertVerificationError):
                raise ConnectFailed(self._unverified(exc.reason)) from None
            raise ConnectFailed(self._cannot(exc.reason)) from None
        except (OSError, HTTPException) as exc:  # reset, time-out while reading, bad status line
            if _plain_http(exc):
                raise ConnectFailed(self._plain_http()) from None
            raise ConnectFailed(self._cannot(exc)) from None

    def _no_token(self) -> None:
        """No token: a wrong URL is the likelier cause, so the connection is tried first
        (``GET /healthz`` needs none) and its failure is what is said; only an appliance
        that answers gets the no-token sentence (UsageError)."""
        try:
            self.json("GET", "/healthz", auth=False)
        except ApiFailed as exc:
            if exc.status < 500:  # a 5xx is an appliance that is there, but unwell
                raise
        raise UsageError(credentials.missing_hint(self._where))

    def _stranger(self, status: str, path: str) -> str:
        """Something answers at the URL, but not as edgeprint does (its 404s are
        problem+json): the URL is wrong, not the request."""
        origin = f" ({self.where.origin})" if self.where else ""
        return (
            f"{self.base}{origin}: this does not look like an edgeprint appliance "
            f"({status} for {path}); check the URL and port"
        )

    def _plain_http(self) -> str:
        origin = f" ({self.where.origin})" if self.where else ""
        plain = "http://" + self.base.removeprefix("https://")
        return f"{self.base}{origin} answered plain HTTP: use http:// ({plain})"

    def _tls_port(self) -> str:
        origin = f" ({self.where.origin})" if self.where else ""
        secure = "https://" + self.base.removeprefix("http://")
        return (
            f"{self.base}{origin} serves TLS: use https:// ({secure}; the CLI pins the "
            "certificate of the config it finds, or give --fingerprint)"
        )

    def _unverified(self, reason: ssl.SSLCertVerificationError) -> str:
        why = (self.trust.why_no_pin if self.trust else None) or "no config of it was found"
        return (
            f"{self.base}: its certificate is not signed by a CA this machine trusts "
            f"({reason.verify_message}); a self-signed appliance is pinned instead, and its "
            f"certificate could not be read: {why}. Give --fingerprint (or "
            f"${tls_trust.FINGERPRINT_ENV}) with what `sudo edgeprint tls fingerprint` shows on "
            "the box, or run the command with sudo there"
        )

    def json(
        self,
        method: str,
        path: str,
        query: dict[str, str] | None = None,
        *,
        auth: bool = True,
        json_body: object = None,
    ) -> tuple[bytes, Any]:
        """The raw body and its JSON value; a 2xx that is not JSON is not edgeprint: the URL
        is wrong (ConnectFailed)."""
        raw = self.call(method, path, query, auth=auth, json_body=json_body)
        try:
            return raw, json.loads(raw)
        except ValueError:
            raise ConnectFailed(self._stranger("an answer that is not JSON", path)) from None

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
            "POST",
            "/v1/jobs",
            body=(bytes(out), f"multipart/form-data; boundary={boundary}"),
            extra_headers={"Idempotency-Key": key},
        )
        try:
            return json.loads(raw)
        except ValueError:
            raise ApiFailed(200, "the answer to POST /v1/jobs is not JSON", raw) from None

    @property
    def _where(self) -> locate.Where:
        return self.where or locate.Where(self.base, "the caller")

    def _cannot(self, reason: object) -> str:
        if isinstance(reason, TimeoutError | socket.timeout):
            why = f"no answer within {self.timeout_s:g} s"
        elif isinstance(reason, OSError) and reason.strerror:
            why = reason.strerror
        else:
            why = str(reason) or type(reason).__name__
        origin = f" ({self.where.origin})" if self.where else ""
        return f"cannot connect to {self.base}{origin}: {why}; {_TRY}"

    def _hint(self, status: int, raw: bytes) -> str:
        """What to check after a 401, a 403 or a missing PIN, naming where the URL and the
        token came from."""
        token = f"the token from {self.token_from}" if self.token_from else "the token"
        slug = _problem_slug(raw)
        if slug == "pin-required":
            return " (give --pin PIN)"
        if status == 403 and slug in ("forbidden", ""):
            if b"it needs role" in raw:  # the server named the roles that may
                return f" (use a token of a role it names; {token} is not one)"
            return f" ({token} may not do this)"
        if status != 401:
            return ""
        if b"expired at" in raw:  # the appliance knows the token: it is past its expires
            return f" ({token} has expired: ask the technician for a new one)"
        if self._where.is_default and b"unknown bearer token" in raw:
            return (
                f" ({self.base} is the default address, used as no config was found: it may "
                f"be another appliance than yours, or {token} is the wrong one; pass --config "
                "PATH or --url URL)"
            )
        return f" (check {token}: the appliance at {self.base} does not know it)"


def _plain_http(reason: object) -> bool:
    """Whether a TLS handshake failed because the server speaks plain HTTP."""
    return isinstance(reason, ssl.SSLError) and (
        reason.reason == "WRONG_VERSION_NUMBER" or "WRONG_VERSION_NUMBER" in str(reason)
    )


def _to_https(base: str, exc: urllib.error.HTTPError) -> bool:
    """Whether plain HTTP reached a TLS port: it redirects to https:// (a GET) or asks for
    an upgrade (426)."""
    if not base.startswith("http://"):
        return False
    location = exc.headers.get("Location", "") if exc.headers else ""
    return exc.code == 426 or (300 <= exc.code < 400 and location.startswith("https://"))


def _read_quietly(resp: urllib.error.HTTPError) -> bytes:
    try:
        return resp.read(64 * 1024)
    except (OSError, HTTPException):
        return b""


def _problem_slug(raw: bytes) -> str:
    """The slug of a problem document's ``type`` (``urn:edgeprint:problem:pin-required``:
    ``pin-required``; "" when there is none)."""
    try:
        problem = json.loads(raw)
    except ValueError:
        return ""
    kind = problem.get("type") if isinstance(problem, dict) else None
    return kind.rsplit(":", 1)[-1] if isinstance(kind, str) else ""


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
    if 300 <= status < 400:
        detail = "the appliance answered with a redirect, which is not followed (check --url)"
    return f"{status} {title}: {detail or 'no detail given'}"


def connect(args: argparse.Namespace) -> Api:
    """The API the command line names (or the one found), with its token; a note of a flag
    that overrode another goes to stderr. Raises UsageError."""
    where = locate.locate(getattr(args, "url", None), getattr(args, "api_config", None))
    if where.note:
        print(f"edgeprint: {clean(where.note)}", file=sys.stderr)
    token = credentials.bearer_token(
        getattr(args, "token", None), getattr(args, "token_file", None), where
    )
    return Api(
        where.url,
        None if token is None else token.value,
        getattr(args, "timeout", DEFAULT_TIMEOUT_S),
        where=where,
        token_from=None if token is None else token.source,
        trust=tls_trust.trust_for(getattr(args, "fingerprint", None), where.cert_file),
    )
