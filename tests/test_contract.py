"""Contract test: schemathesis against a live appliance with ``GET /v1/openapi.json``.

Every documented operation gets generated requests (valid and invalid ones, from
schemathesis' coverage and fuzzing phases), sent over real HTTP to one appliance
(real SQLite file) with a tech token; each answer must be no 5xx, a documented
status, with the documented media type, body schema and headers. Hypothesis is
derandomized (same cases every run); the whole file takes about 10 s.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from edgeprint.api import openapi, route_table
from edgeprint.api.app import Deps
from edgeprint.api.factory import build_app
from testbed.pdfs import make_pdf
from tests.conftest import TECH_TOKEN
from tests.live import Live, live_appliance, unlimited_config

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
]
AUTH = {"Authorization": f"Bearer {TECH_TOKEN}"}
PDF = make_pdf("contract test")

# The document the appliance serves; test_served_document checks it is this one.
schema = schemathesis.openapi.from_dict(json.loads(openapi.document_bytes()))


#: Ids of jobs the ``live`` fixture made: generated ids are almost never a job's.
KNOWN_JOBS: list[str] = []
PRINTERS = ["printer-01", "printer-02", "printer-03"]


@schema.hook("flatmap_body")
def _real_pdf_sometimes(ctx: Any, body: Any) -> Any:
    """Generated ``document`` bytes are never a PDF (415); half the submissions get a real one."""
    if ctx.operation is not None and ctx.operation.path == "/v1/jobs" and isinstance(body, dict):
        return st.sampled_from([body, {**body, "document": PDF}])
    return st.just(body)


@schema.hook("flatmap_path_parameters")
def _real_targets_sometimes(ctx: Any, params: Any) -> Any:
    """Half the time, a job that exists or a configured printer (else mostly 404s)."""
    if not isinstance(params, dict):
        return st.just(params)
    if "job_id" in params and KNOWN_JOBS:
        return st.sampled_from([params, *({**params, "job_id": j} for j in KNOWN_JOBS)])
    if "name" in params:
        return st.sampled_from([params, *({**params, "name": n} for n in PRINTERS)])
    return st.just(params)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    data_dir: Path = tmp_path_factory.mktemp("contract") / "data"
    cfg = unlimited_config(data_dir)
    # the upload page on (issue 24), with no per-address limit in the way
    cfg["release"] = {"web_upload": True, "upload_rate_limit": "1000000/second"}
    with live_appliance(cfg) as running:
        app = running.appliance
        metas = [
            {"owner": "held", "pool": "lobby"},
            {"owner": "held-untargeted"},
            {"owner": "released", "printer": "printer-03", "hold": False},
            {"owner": "pinned", "pool": "lobby", "release_pin": "4711"},
        ]
        for i, meta in enumerate(metas):
            resp = running.run(app.submit(meta, PDF, key=f"contract-{i:04d}"))
            assert resp.status == 201, running.run(resp.text())
            KNOWN_JOBS.append(running.run(resp.json())["id"])
        yield running
    KNOWN_JOBS.clear()


@pytest.fixture(scope="module")
def http() -> Iterator[requests.Session]:
    with requests.Session() as session:
        yield session


def test_served_document(live: Live, http: requests.Session) -> None:
    """Served without a token, as JSON, and exactly the generated document."""
    resp = http.get(f"{live.url}{route_table.PATH}", timeout=10)
    assert resp.status_code == 200
    assert resp.headers["Content-Type"].startswith("application/json")
    assert resp.json() == openapi.document()
    loaded = schemathesis.openapi.from_url(f"{live.url}{route_table.PATH}")
    assert loaded.raw_schema == openapi.document()
    loaded.validate()  # against the OpenAPI 3.1 meta-schema


def test_every_route_documented() -> None:
    """Each route build_app registers is in the document, and nothing else is."""
    app = build_app(Deps(*([cast(Any, None)] * 5)))  # the routes only: nothing is called
    routes = {
        (r.method.lower(), r.resource.canonical)
        for r in app.router.routes()
        if r.method != "HEAD" and r.resource is not None
    }
    documented = {(m, p) for p, ops in openapi.document()["paths"].items() for m in ops}
    assert routes == documented


@schema.parametrize()
@settings(
    max_examples=50,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_api(case: schemathesis.Case, live: Live, http: requests.Session) -> None:
    """No 5xx; status, media type, body and headers as documented.

    Identify talks to the (unreachable) printer at once: its documented 502
    ``printer-error`` is the right answer here, so only that operation may give a 5xx.
    """
    checks = CHECKS
    if case.operation.path == "/v1/printers/{name}/identify":
        checks = [c for c in CHECKS if c is not not_a_server_error]
    case.call_and_validate(base_url=live.url, session=http, headers=AUTH, checks=checks, timeout=10)


def test_every_route_checks_the_role_its_row_names(live: Live, http: requests.Session) -> None:
    """The route table's role is what each route enforces: no token is 401 where a role is
    named, a kiosk token is 403 where its role does not grant what the row needs (``tech``,
    ``view``), and no token is needed where none is."""
    from edgeprint.api.auth import grants
    from edgeprint.api.routes import ROUTES
    from tests.conftest import KIOSK_TOKEN

    job = KNOWN_JOBS[0]
    for route in ROUTES:
        if route.operation_id in ("ippQueue", "ippJob", "statusPage"):
            continue  # its own authentication (IPP) / a page
        url = live.url + route.path.format(job_id=job, name="printer-01", owner="ann")
        bare = http.request(route.method, url, timeout=10)
        kiosk = http.request(
            route.method, url, headers={"Authorization": f"Bearer {KIOSK_TOKEN}"}, timeout=10
        )
        if route.role is None:
            assert bare.status_code not in (401, 403), route.operation_id
        else:
            assert bare.status_code == 401, route.operation_id
            refused = not grants("kiosk", route.role)
            assert (kiosk.status_code == 403) == refused, route.operation_id
