"""The app factory: the aiohttp application with every route of the table, each behind
its role check and the audit trail, and the state its handlers share."""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web

from edgeprint.api import app, audited, ipp, openapi, plain_http, release, upload_page
from edgeprint.api.route_table import DOCUMENT, Handler, Role
from edgeprint.api.routes import ROUTES
from edgeprint.service.release_desk import ReleaseDesk


def _guarded(handler: Handler, role: Role | None) -> Handler:
    """``handler`` behind its role check (the caller is then in ``request[app.CALLER]``)."""
    if role is None:
        return handler

    async def guarded(request: web.Request) -> web.StreamResponse:
        request[app.CALLER] = await app.authorize(request, role)
        return await handler(request)

    guarded.__doc__ = handler.__doc__
    return guarded


def build_app(deps: app.Deps) -> web.Application:
    """The application with every route of :data:`~edgeprint.api.routes.ROUTES`; ``deps`` is
    stored under ``DEPS``."""
    application = web.Application(
        # plain_http inside app's: its answers get the correlation id and the metrics
        middlewares=[app.middleware, plain_http.middleware],
        client_max_size=app.MAX_JSON_BODY,
    )
    application[app.DEPS] = deps
    application[release.DESK] = ReleaseDesk(deps.service)
    endpoint = application[ipp.ENDPOINT] = ipp.IppEndpoint(deps, app.CORRELATION_ID)
    application[upload_page.DOOR] = upload_page.UploadDoor(deps)
    make_document: Callable[[], bytes] = openapi.document_bytes  # at its first GET, then cached
    application[DOCUMENT] = make_document
    for route in ROUTES:
        handler = route.handler if route.bind is None else route.bind(endpoint)
        assert handler is not None, route.operation_id
        guarded = audited.wrap(route.operation_id, route.role, _guarded(handler, route.role))
        if route.method == "get":
            application.router.add_get(route.path, guarded)  # and HEAD
        else:
            application.router.add_route(route.method.upper(), route.path, guarded)
    return application
