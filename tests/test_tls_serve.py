"""The appliance serves TLS on its one port (issue 26): real TLS on loopback, real curl,
openssl and ipptool.

- https with curl ``--cacert`` and ``--pinnedpubkey`` (a wrong pin: curl exits 90 and sends
  nothing); TLS 1.0 and 1.1 refused, 1.2 and 1.3 served;
- plain HTTP on the TLS port: /healthz, 308 to https:// for a page, 426 for the rest and
  for anything carrying credentials, an IPP answer naming ipps:// (nothing stored);
- ipptool over ipps:// completes (no TLS 1.3 session tickets, ``num_tickets = 0``);
- a handshake that never finishes is bounded like a request head; a flood of them at the
  connection cap does not keep a real client out;
- a self-signed pair is made at the first start (0600, the names clients use).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import socket
import ssl
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from edgeprint import certificates
from edgeprint.ipp import codec
from edgeprint.ipp.names import GroupTag, Operation, Status
from edgeprint.ipp.values import strings
from testbed.pdfs import make_pdf
from testbed.rig import Rig, find_tool
from tests.conftest import KIOSK_TOKEN, Appliance
from tests.test_slow_clients import accepted, connect, parse, until_eof

IDLE_S = 0.5
WRONG_PIN = "sha256//" + "A" * 43 + "="


def tls_server(tmp_path: Path, **server: Any) -> dict[str, Any]:
    """The [server] keys of a self-signed TLS appliance whose pair lives in ``tmp_path``."""
    return {
        "tls": "self-signed",
        "cert_file": str(tmp_path / "tls.crt"),
        "key_file": str(tmp_path / "tls.key"),
        **server,
    }


def client_context(cafile: Path) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(cafile))


def https(app: Appliance, path: str = "") -> str:
    return f"https://127.0.0.1:{app.running.port}{path}"


def http(app: Appliance, path: str = "") -> str:
    return f"http://127.0.0.1:{app.running.port}{path}"


@pytest.fixture
def tls_appliance(
    make_appliance: Callable[..., Any], tmp_path: Path
) -> Callable[..., contextlib.AbstractAsyncContextManager[Appliance]]:
    def make(**server: Any) -> contextlib.AbstractAsyncContextManager[Appliance]:
        return make_appliance(**tls_server(tmp_path, **server))  # type: ignore[no-any-return]

    return make


async def run(*argv: str, timeout_s: float = 30.0, **kw: Any) -> tuple[int, str]:
    """A real command's exit code and its output (stdout and stderr)."""
    proc = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, **kw
    )
    out, _ = await asyncio.wait_for(proc.communicate(), timeout_s)
    assert proc.returncode is not None
    return proc.returncode, out.decode(errors="replace")


def served_fingerprint(port: int) -> str:
    """The SHA-256 fingerprint of the certificate a new TLS connection to ``port`` gets."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        ctx.wrap_socket(raw) as conn,
    ):
        der = conn.getpeercert(binary_form=True)
    assert der is not None
    return certificates.fingerprint_of(certificates.x509.load_der_x509_certificate(der))


# --- the pair made at the first start --------------------------------------------------------


async def test_first_start_makes_a_self_signed_pair_0600_naming_the_box(
    tls_appliance: Callable[..., Any], tmp_path: Path
) -> None:
    async with tls_appliance() as app:
        served = app.running.tls
        assert served is not None
        for name in ("tls.crt", "tls.key"):
            assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o600
        names = set(served.certificate.names)
        host = socket.gethostname().split(".", 1)[0]
        assert {"127.0.0.1", "::1", "localhost", host, f"{host}.local"} <= names
        # What a client sees is what the appliance says it serves.
        fingerprint = await asyncio.to_thread(served_fingerprint, app.running.port)
        assert fingerprint == served.certificate.fingerprint
    # A second start keeps the pair (kiosks pinned it).
    async with tls_appliance() as app:
        assert app.running.tls is not None
        assert app.running.tls.certificate.fingerprint == fingerprint


# --- clients: curl with the CA file or the pinned key, old protocol versions ------------------


async def test_curl_with_cacert_or_the_pinned_key_gets_in(
    tls_appliance: Callable[..., Any], tmp_path: Path
) -> None:
    async with tls_appliance() as app:
        assert app.running.tls is not None
        pin = app.running.tls.certificate.pin
        cacert = str(tmp_path / "tls.crt")
        url = https(app, "/v1/printers")
        auth = f"Authorization: Bearer {KIOSK_TOKEN}"
        code, out = await run(
            "curl",
            "-sS",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "--cacert",
            cacert,
            "-H",
            auth,
            https(app, "/healthz"),
        )
        assert (code, out) == (0, "200")
        # Pinning the public key: the CA check is off (-k), the pin alone decides.
        code, out = await run(
            "curl",
            "-sS",
            "-k",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "--pinnedpubkey",
            pin,
            "-H",
            auth,
            url,
        )
        assert (code, out) == (0, "403")  # in, and the kiosk token may not list printers


async def test_curl_with_a_wrong_pin_refuses_and_sends_nothing(
    tls_appliance: Callable[..., Any], tmp_path: Path
) -> None:
    async with tls_appliance() as app:
        before = app.snapshot()
        doc = tmp_path / "badge.pdf"
        doc.write_bytes(make_pdf())
        requests_before = _http_requests(app)
        code, out = await run(
            "curl",
            "-sS",
            "-k",
            "--pinnedpubkey",
            WRONG_PIN,
            "-H",
            f"Authorization: Bearer {KIOSK_TOKEN}",
            "-H",
            "Idempotency-Key: pinned-0001",
            "-F",
            'metadata={"owner":"ann","pool":"lobby"};type=application/json',
            "-F",
            f"document=@{doc};type=application/pdf",
            https(app, "/v1/jobs"),
        )
        assert code == 90, out  # CURLE_SSL_PINNEDPUBKEYNOTMATCH
        assert "public key does not match pinned public key" in out
        assert app.snapshot() == before
        assert _http_requests(app) == requests_before  # no request reached the application


def _http_requests(app: Appliance) -> float:
    """Requests the API has answered, every route (the request-duration histogram's count)."""
    registry = app.running.service.metrics.registry
    return sum(
        sample.value
        for metric in registry.collect()
        if metric.name == "edgeprint_http_request_duration_seconds"
        for sample in metric.samples
        if sample.name.endswith("_count")
    )


@pytest.mark.parametrize(
    ("version", "served"),
    [("-tls1", False), ("-tls1_1", False), ("-tls1_2", True), ("-tls1_3", True)],
)
async def test_only_tls_1_2_and_newer_are_served(
    tls_appliance: Callable[..., Any],
    version: str,
    served: bool,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """openssl s_client offering one version only; SECLEVEL=0 lets the local openssl offer
    the old ones, so a refusal is the appliance's. A refused one is one log line
    (finding 9: the box said nothing), with the peer and OpenSSL's reason."""
    from edgeprint.api import tls_listener

    # no earlier test's line, and none of its refusals held back
    monkeypatch.setitem(tls_listener._logged, "at", float("-inf"))
    monkeypatch.setitem(tls_listener._logged, "held", 0)
    async with tls_appliance() as app:
        code, out = await run(
            "openssl",
            "s_client",
            version,
            "-cipher",
            "DEFAULT@SECLEVEL=0",
            "-connect",
            f"127.0.0.1:{app.running.port}",
            stdin=asyncio.subprocess.DEVNULL,
        )
        if "no protocols available" in out:
            pytest.skip(f"this openssl cannot offer {version} at all")
        if served:
            assert code == 0, out
            assert f"New, TLSv1.{version[-1]}, Cipher is " in out, out
        else:
            assert code != 0, out
            assert "Cipher is (NONE)" in out, out
    failed = [r for r in caplog.records if getattr(r, "event", "") == "tls_handshake_failed"]
    if served:
        assert failed == []
    else:
        assert [r.getMessage() for r in failed] == [
            "TLS handshake failed from 127.0.0.1: UNSUPPORTED_PROTOCOL"
        ]


# --- plain HTTP on the TLS port ----------------------------------------------------------------


async def test_plain_http_on_the_tls_port_gets_health_a_redirect_or_426(
    tls_appliance: Callable[..., Any], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with tls_appliance() as app:
        ctx = client_context(tmp_path / "tls.crt")
        form = aiohttp.FormData()
        form.add_field("metadata", '{"owner":"ann"}', content_type="application/json")
        form.add_field("document", make_pdf(), content_type="application/pdf", filename="b.pdf")
        headers = {"Authorization": f"Bearer {KIOSK_TOKEN}", "Idempotency-Key": "tls-0001"}
        async with app.http.post(https(app, "/v1/jobs"), data=form, headers=headers, ssl=ctx) as r:
            assert r.status == 201, await r.text()
            job = await r.json()
        assert job["state"] == "HELD"
        before = app.snapshot()
        port = app.running.port

        async with app.http.get(http(app, "/healthz")) as r:
            assert r.status == 200
            assert (await r.json())["status"] == "ok"
        for method in ("GET", "HEAD"):
            async with app.http.request(
                method, http(app, "/status?printer=printer-01"), allow_redirects=False
            ) as r:
                assert r.status == 308
                assert (
                    r.headers["Location"] == f"https://127.0.0.1:{port}/status?printer=printer-01"
                )
        # Without credentials, a POST of the API: 426, "use https://".
        with caplog.at_level(logging.INFO):
            async with app.http.post(http(app, "/v1/jobs"), data=b"x") as r:
                assert r.status == 426
                assert r.headers["Content-Type"] == "application/problem+json"
                assert r.headers["Upgrade"] == "TLS/1.2, HTTP/1.1"
                problem = await r.json()
        url = f"https://127.0.0.1:{port}/v1/jobs"
        assert problem["type"] == "urn:edgeprint:problem:upgrade-required"
        assert problem["url"] == url
        assert problem["detail"] == f"this port speaks TLS only: use {url}"
        events = [getattr(r, "event", "") for r in caplog.records]
        assert events.count("plain_http_refused") == 1
        assert "plain_token_refused" not in events
        assert app.snapshot() == before  # still HELD, nothing new


async def test_credentials_in_clear_on_the_tls_port_get_426_never_a_redirect(
    tls_appliance: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    """Finding 1: a GET carrying a token got a 308 (a client following it drops the header
    and is told it sent none) and no log line. Any method, any path but /healthz: 426 whose
    detail says the token crossed in clear and should be replaced, one log line each,
    never the token."""
    async with tls_appliance() as app:
        before = app.snapshot()
        port = app.running.port
        asks = [
            ("GET", "/v1/jobs"),
            ("GET", "/metrics"),
            ("GET", "/readyz"),
            ("HEAD", "/v1/openapi.json"),
            ("GET", "/status?printer=printer-01"),
            ("POST", "/v1/jobs"),
            ("DELETE", "/v1/jobs/0123456789abcdef"),
        ]
        with caplog.at_level(logging.INFO):
            for method, path in asks:
                async with app.http.request(
                    method,
                    http(app, path),
                    headers={"Authorization": f"Bearer {KIOSK_TOKEN}"},
                    allow_redirects=False,
                ) as r:
                    assert r.status == 426, (method, path)
                    assert "Location" not in r.headers
                    assert r.headers["Upgrade"] == "TLS/1.2, HTTP/1.1"
                    assert r.headers["Content-Type"] == "application/problem+json"
                    if method == "HEAD":
                        continue
                    problem = await r.json()
                url = f"https://127.0.0.1:{port}{path}"
                assert problem["type"] == "urn:edgeprint:problem:upgrade-required"
                assert problem["url"] == url
                assert problem["detail"] == (
                    f"this port speaks TLS only: use {url}; the credentials of this request "
                    "crossed the network in clear text: replace them (a new token)"
                )
        refused = [r for r in caplog.records if getattr(r, "event", "") == "plain_token_refused"]
        assert len(refused) == len(asks)
        assert refused[0].getMessage() == (
            "credentials sent in clear text to the TLS port refused: GET /v1/jobs from 127.0.0.1"
        )
        for record in caplog.records:
            assert KIOSK_TOKEN not in record.getMessage()
            assert KIOSK_TOKEN not in str(record.__dict__)
        # /healthz answers even with a header (load balancers add whatever they add).
        async with app.http.get(
            http(app, "/healthz"), headers={"Authorization": f"Bearer {KIOSK_TOKEN}"}
        ) as r:
            assert r.status == 200
        assert app.snapshot() == before


async def test_plain_ipp_on_the_tls_port_is_answered_in_ipp(
    tls_appliance: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    """An IPP request over plain HTTP gets an IPP answer naming ipps:// (request-id echoed),
    not an HTTP 426, which CUPS takes as an offer of an in-place upgrade."""
    async with tls_appliance() as app:
        before = app.snapshot()
        base = f"127.0.0.1:{app.running.port}"
        message = codec.request(
            Operation.GET_PRINTER_ATTRIBUTES, 77, printer_uri=f"ipp://{base}/ipp/print/lobby"
        )
        for auth in ({}, {"Authorization": f"Bearer {KIOSK_TOKEN}"}):
            with caplog.at_level(logging.INFO):
                async with app.http.post(
                    http(app, "/ipp/print/lobby"),
                    data=message.encode(),
                    headers={"Content-Type": "application/ipp", **auth},
                ) as r:
                    assert r.status == 200
                    assert "Upgrade" not in r.headers
                    answer = codec.parse(await r.read())
            assert answer.request_id == 77
            assert answer.status_code == Status.CLIENT_ERROR_NOT_AUTHORIZED
            detail = f"this port speaks TLS only: use ipps://{base}/ipp/print/lobby"
            if auth:
                detail += (
                    "; the credentials of this request crossed the network in clear text: "
                    "replace them (a new token)"
                )
            assert answer.value(GroupTag.OPERATION, "status-message") == detail
        events = [getattr(r, "event", "") for r in caplog.records]
        assert events.count("plain_http_refused") == 1
        assert events.count("plain_token_refused") == 1
        assert app.snapshot() == before


async def test_ipptool_with_an_ipp_uri_is_told_to_use_ipps(printers: Rig, tmp_path: Path) -> None:
    """Finding 4: with the 426 for every plain request, ipptool -tv ipp://… printed
    ``[FAIL] … status-code = cups-pki-error (Encryption is not supported.)``: CUPS answers
    any HTTP 426 by trying an RFC 2817 in-place upgrade (``OPTIONS *`` with ``Upgrade:``),
    whatever the Upgrade field offers, and edgeprint does not serve one. Answered in IPP
    instead, ipptool (CUPS 2.4.2) prints::

        Get printer attributes using get-printer-attributes            [FAIL]
          ...
          status-code = client-error-not-authorized (this port speaks TLS only: use
          ipps://localhost:PORT/ipp/print/lobby)
    """
    if find_tool("ipptool") is None:
        pytest.skip("ipptool: apt-get install cups-ipp-utils")
    from tests.printing import appliance, rig_config

    cfg = rig_config(tmp_path / "data", printers)
    cfg["server"].update(tls_server(tmp_path))
    async with appliance(cfg) as (served, _):
        home = tmp_path / "home"
        home.mkdir()
        port = served.port
        code, out = await run(
            "ipptool",
            "-tv",
            "-T",
            "10",
            f"ipp://127.0.0.1:{port}/ipp/print/lobby",
            "get-printer-attributes.test",
            timeout_s=30,
            env={**os.environ, "HOME": str(home)},
        )
    assert code != 0, out
    # ipptool sends "Host: localhost:PORT" for 127.0.0.1; the port is the socket's.
    told = "status-code = client-error-not-authorized (this port speaks TLS only: use ipps://"
    assert re.search(
        re.escape(told) + r"(127\.0\.0\.1|localhost):" + re.escape(f"{port}/ipp/print/lobby)"),
        out,
    ), out
    assert "Encryption is not supported" not in out, out


@pytest.mark.parametrize(
    ("host", "where"),
    [
        pytest.param("box.example", "box.example:{port}", id="name-without-port"),
        pytest.param("box.example:9999", "box.example:{port}", id="name-with-another-port"),
        pytest.param("[::1]:1", "[::1]:{port}", id="ipv6-with-another-port"),
        pytest.param("evil.example/x?", "127.0.0.1:{port}", id="not-a-host"),
        pytest.param("x@evil", "127.0.0.1:{port}", id="userinfo"),
    ],
)
async def test_a_redirect_takes_the_host_name_but_the_port_it_arrived_on(
    tls_appliance: Callable[..., Any], host: str, where: str
) -> None:
    """Finding 10: ``Host: evil.example`` gave ``https://evil.example/`` (the port dropped);
    the name is taken when it is a plain name or address, the port is always the socket's."""
    async with tls_appliance() as app, connect(app) as [(reader, writer)]:
        head = f"GET /status HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
        writer.write(head.encode())
        status, headers, _ = parse(await until_eof(reader))
    assert status == 308
    assert headers["location"] == f"https://{where.format(port=app.running.port)}/status"


# --- slow and hostile TLS clients --------------------------------------------------------------


@pytest.mark.parametrize(
    "sent",
    [
        pytest.param(b"", id="sends-nothing"),
        pytest.param(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", id="partial-client-hello"),
        pytest.param(b"\x16", id="one-byte"),
    ],
)
async def test_a_handshake_that_never_finishes_is_closed_after_idle_timeout(
    tls_appliance: Callable[..., Any], sent: bytes
) -> None:
    async with tls_appliance(idle_timeout_s=IDLE_S) as app:
        async with connect(app) as [(reader, writer)]:
            started = time.monotonic()
            writer.write(sent)
            data = await until_eof(reader)
            elapsed = time.monotonic() - started
        assert data == b""
        assert 0.8 * IDLE_S <= elapsed < 3.0
        assert accepted(app.running.port) == 0


async def test_stalled_handshakes_at_the_cap_do_not_keep_a_real_client_out(
    tls_appliance: Callable[..., Any], tmp_path: Path
) -> None:
    """60 connections that start a ClientHello and stop, against max_connections=20: at
    most 20 are held, the oldest make room, and a real https request gets in long before
    the idle time-out."""
    idle_s = 3.0
    async with tls_appliance(max_connections=20, idle_timeout_s=idle_s) as app:
        port = app.running.port
        started = time.monotonic()
        async with connect(app, 60) as conns:
            for _, writer in conns:
                writer.write(b"\x16\x03\x01\x02\x00")
            ctx = client_context(tmp_path / "tls.crt")
            async with app.http.get(https(app, "/healthz"), ssl=ctx) as r:
                assert r.status == 200
            assert time.monotonic() - started < idle_s * 0.75
            assert accepted(port) <= 20 + 1
            for reader, _ in conns[:40]:  # evicted to make room: closed at once
                assert await until_eof(reader, deadline_s=idle_s * 0.75) == b""
            assert time.monotonic() - started < idle_s * 0.9


# --- IPP over TLS -----------------------------------------------------------------------------


async def test_ipptool_over_ipps_completes(printers: Rig, tmp_path: Path) -> None:
    """CUPS 2.4's ipptool waits for ever on a TLS 1.3 server that sends session tickets:
    with num_tickets = 0 its get-printer-attributes.test completes (under a time-out)."""
    if find_tool("ipptool") is None:
        pytest.skip("ipptool: apt-get install cups-ipp-utils")
    from tests.printing import appliance, rig_config

    cfg = rig_config(tmp_path / "data", printers)
    cfg["server"].update(tls_server(tmp_path))
    async with appliance(cfg) as (served, _):
        home = tmp_path / "home"  # ipptool keeps what it trusted on first use under ~/.cups
        home.mkdir()
        for queue in ("lobby", "printer-01"):
            uri = f"ipps://127.0.0.1:{served.port}/ipp/print/{queue}"
            code, out = await run(
                "ipptool",
                "-tv",
                "-T",
                "10",
                uri,
                "get-printer-attributes.test",
                timeout_s=30,
                env={**os.environ, "HOME": str(home)},
            )
            assert code == 0, out
            assert "[PASS]" in out, out
            assert "[FAIL]" not in out, out


async def test_an_ipps_queue_says_so_in_its_attributes(
    tls_appliance: Callable[..., Any], tmp_path: Path
) -> None:
    """Over TLS a queue's printer-uri-supported is ipps://, its icons https://, and its
    uri-security-supported "tls": a client keeps using TLS with the URIs it is given."""
    async with tls_appliance() as app:
        ctx = client_context(tmp_path / "tls.crt")
        base = f"127.0.0.1:{app.running.port}"
        message = codec.request(
            Operation.GET_PRINTER_ATTRIBUTES, 5, printer_uri=f"ipps://{base}/ipp/print/lobby"
        )
        async with app.http.post(
            https(app, "/ipp/print/lobby"),
            data=message.encode(),
            headers={"Content-Type": "application/ipp"},
            ssl=ctx,
        ) as r:
            assert r.status == 200
            answer = codec.parse(await r.read())
        assert answer.status_code == Status.SUCCESSFUL_OK
        printer = GroupTag.PRINTER
        assert answer.value(printer, "printer-uri-supported") == f"ipps://{base}/ipp/print/lobby"
        assert answer.value(printer, "uri-security-supported") == "tls"
        icons = strings(answer.get(printer, "printer-icons"))
        assert len(icons) == 3
        assert all(i.startswith(f"https://{base}/ipp/icons/") for i in icons), icons
        # The icons over plain HTTP: a redirect like any page.
        async with app.http.get(http(app, "/ipp/icons/128.png"), allow_redirects=False) as r:
            assert r.status == 308
            assert r.headers["Location"] == f"https://{base}/ipp/icons/128.png"


def test_a_self_signed_certificate_names_what_clients_use() -> None:
    from edgeprint.tls_runtime import default_names

    host = socket.gethostname().split(".", 1)[0]
    lan = ["192.0.2.5", "2001:db8::5"]
    assert default_names("10.0.0.5", lan=lambda: lan) == [
        "10.0.0.5",
        host,
        f"{host}.local",
        "localhost",
        "127.0.0.1",
        "::1",
    ]
    assert default_names("0.0.0.0", lan=lambda: lan) == [
        host,
        f"{host}.local",
        "localhost",
        "127.0.0.1",
        "::1",
        *lan,
    ]
