"""``GET /v1/tokens`` (tech) and ``GET /v1/token`` (the caller's own): the configured
tokens, their roles, expiry and last use (issue 26). Never a secret or a digest.

Last use (when, from which address) is what :class:`edgeprint.api.auth.TokenAuth` kept in
memory since this appliance started: no store row is written per request.
"""

from __future__ import annotations

from aiohttp import web

from edgeprint import errors
from edgeprint.api.app import CALLER, DEPS
from edgeprint.api.auth import TokenAuth
from edgeprint.config import TokenConfig
from edgeprint.models import TokenOut, TokensOut
from edgeprint.timefmt import rfc3339_ms


def _out(auth: TokenAuth, token: TokenConfig) -> TokenOut:
    used = auth.last_use(token.name)
    return TokenOut(
        name=token.name,
        role=token.role,
        printers=list(token.printers),
        expires=None if token.expires is None else rfc3339_ms(token.expires.timestamp()),
        expired=auth.expired(token),
        last_used=None if used is None else rfc3339_ms(used.at),
        last_used_from=None if used is None else used.source,
    )


def _json(model: TokenOut | TokensOut) -> web.Response:
    return web.Response(body=model.model_dump_json().encode(), content_type="application/json")


async def list_tokens(request: web.Request) -> web.Response:
    """GET /v1/tokens: every configured token (tech)."""
    auth = request.app[DEPS].auth
    tokens = [_out(auth, t) for t in auth.tokens]
    return _json(TokensOut(since=rfc3339_ms(auth.since), tokens=tokens))


async def this_token(request: web.Request) -> web.Response:
    """GET /v1/token: the token this request carries (kiosk, viewer or tech)."""
    auth = request.app[DEPS].auth
    name = request[CALLER].name
    token = next((t for t in auth.tokens if t.name == name), None)
    if token is None:  # a reload removed it since the check
        raise errors.Unauthorized("unknown bearer token")
    return _json(_out(auth, token))
