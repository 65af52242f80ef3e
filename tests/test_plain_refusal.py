"""No token over plain HTTP from off the box (issue 26, item 3), proven from a real
non-loopback address: a network namespace joined to this machine by a veth pair, and curl
run inside it (``ip netns exec``) against the appliance listening on the host end.

Refused: a bearer token (426 ``upgrade-required``) and IPP Basic credentials (IPP
``client-error-not-authorized`` naming ipps://), logged with the peer and the path, never
the token; nothing changes. Allowed: the same requests with ``allow_plain_http = true``, with
a config that predates TLS (no ``tls`` key), from the box itself, and over TLS.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import ssl
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from edgeprint.ipp import codec
from edgeprint.ipp.names import GroupTag, Operation, Status, Tag
from edgeprint.ipp.values import attr
from testbed.pdfs import make_pdf
from tests.conftest import KIOSK_TOKEN, Appliance


@dataclass
class Namespace:
    """A network namespace whose only way out is a veth pair to this machine."""

    name: str
    host_ip: str  # this machine's end: the appliance listens here
    ns_ip: str  # the other machine's address

    async def curl(self, *argv: str, timeout_s: float = 20.0) -> tuple[int, str]:
        """curl inside the namespace: its exit code and stdout."""
        proc = await asyncio.create_subprocess_exec(
            "ip",
            "netns",
            "exec",
            self.name,
            "curl",
            "-sS",
            "--max-time",
            "10",
            *argv,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), timeout_s)
        assert proc.returncode is not None
        assert proc.returncode == 0 or err, err
        return proc.returncode, out.decode(errors="replace")


def _ip(*argv: str) -> None:
    subprocess.run(["ip", *argv], check=True, capture_output=True, timeout=10)


@pytest.fixture
def netns() -> Iterator[Namespace]:
    suffix = secrets.token_hex(3)
    name, host_end, ns_end = f"ep26-{suffix}", f"veh{suffix}", f"ven{suffix}"
    net = f"10.231.{1 + secrets.randbelow(250)}"
    try:
        _ip("netns", "add", name)
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = getattr(exc, "stderr", b"") or str(exc).encode()
        pytest.skip(f"cannot make a network namespace here (ip netns add): {detail!r}")
    try:
        _ip("link", "add", host_end, "type", "veth", "peer", "name", ns_end)
        _ip("link", "set", ns_end, "netns", name)
        _ip("addr", "add", f"{net}.1/30", "dev", host_end)
        _ip("link", "set", host_end, "up")
        _ip("netns", "exec", name, "ip", "addr", "add", f"{net}.2/30", "dev", ns_end)
        _ip("netns", "exec", name, "ip", "link", "set", ns_end, "up")
        _ip("netns", "exec", name, "ip", "link", "set", "lo", "up")
        yield Namespace(name, f"{net}.1", f"{net}.2")
    finally:
        subprocess.run(["ip", "link", "del", host_end], capture_output=True, timeout=10)
        subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=10)


@pytest.fixture
def lan_appliance(make_appliance: Callable[..., Any], netns: Namespace) -> Callable[..., Any]:
    """``async with lan_appliance(**server)``: an appliance listening on the host end only."""

    def make(**server: Any) -> Any:
        return make_appliance(host=netns.host_ip, **server)

    return make


def _url(app: Appliance, path: str, scheme: str = "http") -> str:
    return f"{scheme}://{app.running.host}:{app.running.port}{path}"


async def _held_job(app: Appliance) -> str:
    """A HELD job submitted from this machine to its LAN address (allowed: the box itself)."""
    form = aiohttp.FormData()
    form.add_field("metadata", '{"owner":"ann","pool":"lobby"}', content_type="application/json")
    form.add_field("document", make_pdf(), content_type="application/pdf", filename="b.pdf")
    headers = {"Authorization": f"Bearer {KIOSK_TOKEN}", "Idempotency-Key": "lan-0001"}
    async with app.http.post(_url(app, "/v1/jobs"), data=form, headers=headers) as r:
        assert r.status == 201, await r.text()
        body: dict[str, Any] = await r.json()
    assert body["state"] == "HELD"
    return str(body["id"])


async def _state(app: Appliance, job_id: str) -> str:
    job = await app.running.service.get(job_id)
    return job.state.value


AUTH = f"Authorization: Bearer {KIOSK_TOKEN}"


def refusal(url: str) -> str:
    """What a token over plain HTTP from another machine is told (detail, status-message)."""
    return (
        f"use {url}: tokens are refused over plain HTTP from other machines (set [server] "
        'tls = "self-signed"); replace this one, it crossed the network in clear text'
    )


@pytest.fixture
def pdf_file(tmp_path: Path) -> Path:
    path = tmp_path / "badge.pdf"
    path.write_bytes(make_pdf())
    return path


async def test_a_bearer_token_over_plain_http_from_another_machine_is_refused(
    lan_appliance: Callable[..., Any],
    netns: Namespace,
    pdf_file: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with lan_appliance(tls="off") as app:
        job_id = await _held_job(app)
        before = app.snapshot()
        with caplog.at_level(logging.INFO):
            for argv, path in (
                (["-X", "POST", "-H", AUTH], f"/v1/jobs/{job_id}/release"),
                (
                    [
                        "-X",
                        "POST",
                        "-H",
                        AUTH,
                        "-H",
                        "Idempotency-Key: lan-0002",
                        "-F",
                        'metadata={"owner":"eve"};type=application/json',
                        "-F",
                        f"document=@{pdf_file};type=application/pdf",
                    ],
                    "/v1/jobs",
                ),
                (["-H", AUTH], f"/v1/jobs/{job_id}"),
            ):
                code, out = await netns.curl("-w", "\n%{http_code}", *argv, _url(app, path))
                assert code == 0
                body, status = out.rsplit("\n", 1)
                assert status == "426", (path, out)
                problem = json.loads(body)
                url = _url(app, path, "https")
                assert problem["type"] == "urn:edgeprint:problem:upgrade-required"
                assert problem["url"] == url
                assert problem["detail"] == refusal(url)
            # Without a token the plain door is open as before (health, the status page).
            _, out = await netns.curl("-w", "\n%{http_code}", _url(app, "/healthz"))
            assert out.endswith("\n200")
        assert await _state(app, job_id) == "HELD"
        assert app.snapshot() == before
        refused = [r for r in caplog.records if getattr(r, "event", "") == "plain_token_refused"]
        assert [(r.__dict__["peer"], r.__dict__["path"]) for r in refused] == [
            (netns.ns_ip, f"/v1/jobs/{job_id}/release"),
            (netns.ns_ip, "/v1/jobs"),
            (netns.ns_ip, f"/v1/jobs/{job_id}"),
        ]
        assert refused[0].getMessage() == (
            "credentials sent without TLS from another machine refused: POST "
            f"/v1/jobs/{job_id}/release from {netns.ns_ip}"
        )
        for record in caplog.records:
            assert KIOSK_TOKEN not in record.getMessage()
            assert KIOSK_TOKEN not in json.dumps(record.__dict__, default=str)


@pytest.mark.parametrize(
    "server",
    [
        pytest.param({"tls": "off", "allow_plain_http": True}, id="allow_plain_http"),
        pytest.param({}, id="config-without-tls"),
    ],
)
async def test_the_same_request_goes_through_when_the_venue_allows_plain_http(
    lan_appliance: Callable[..., Any], netns: Namespace, server: dict[str, Any]
) -> None:
    async with lan_appliance(**server) as app:
        job_id = await _held_job(app)
        path = f"/v1/jobs/{job_id}/release"
        _, out = await netns.curl("-w", "\n%{http_code}", "-X", "POST", "-H", AUTH, _url(app, path))
        assert out.endswith("\n200"), out
        assert await _state(app, job_id) == "RELEASED"


def _ipp_request(app: Appliance, operation: int, tmp_path: Path) -> Path:
    uri = f"ipp://{app.running.host}:{app.running.port}/ipp/print/lobby"
    attributes = [attr("requesting-user-name", Tag.NAME, "kiosk-1")]
    data = b""
    if operation == Operation.PRINT_JOB:
        attributes.append(attr("document-format", Tag.MIME_MEDIA_TYPE, "application/pdf"))
        data = make_pdf()
    message = codec.request(operation, 77, printer_uri=uri, attributes=attributes, data=data)
    path = tmp_path / f"op-{operation}.ipp"
    path.write_bytes(message.encode())
    return path


async def _ipp(netns: Namespace, app: Appliance, body: Path, out: Path) -> codec.IppMessage:
    code, status = await netns.curl(
        "-o",
        str(out),
        "-w",
        "%{http_code}",
        "-u",
        f"kiosk-1:{KIOSK_TOKEN}",
        "-H",
        "Content-Type: application/ipp",
        "--data-binary",
        f"@{body}",
        _url(app, "/ipp/print/lobby"),
    )
    assert (code, status) == (0, "200")
    return codec.parse(await asyncio.to_thread(out.read_bytes))


async def test_ipp_basic_credentials_over_plain_http_from_another_machine_are_refused(
    lan_appliance: Callable[..., Any], netns: Namespace, tmp_path: Path
) -> None:
    async with lan_appliance(
        tls="off", sections={"ipp": {"auth": "basic", "advertise": False}}
    ) as app:
        before = app.snapshot()
        for operation in (Operation.GET_JOBS, Operation.PRINT_JOB):
            body = _ipp_request(app, operation, tmp_path)
            answer = await _ipp(netns, app, body, tmp_path / "answer.ipp")
            assert answer.status_code == Status.CLIENT_ERROR_NOT_AUTHORIZED
            assert answer.request_id == 77
            message = answer.value(GroupTag.OPERATION, "status-message")
            url = f"ipps://{app.running.host}:{app.running.port}/ipp/print/lobby"
            assert message == refusal(url)
        assert app.snapshot() == before  # no job from the Print-Job

    allowed = {"ipp": {"auth": "basic", "advertise": False}}
    async with lan_appliance(tls="off", allow_plain_http=True, sections=allowed) as app:
        body = _ipp_request(app, Operation.GET_JOBS, tmp_path)
        answer = await _ipp(netns, app, body, tmp_path / "answer.ipp")
        assert answer.status_code == Status.SUCCESSFUL_OK


async def test_over_tls_from_another_machine_the_token_is_welcome(
    lan_appliance: Callable[..., Any], netns: Namespace, tmp_path: Path
) -> None:
    """The same kiosk over https (pinned key) gets in; over plain HTTP to the TLS port it
    gets the port's 426 and nothing changes."""
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    async with lan_appliance(tls="self-signed", cert_file=str(cert), key_file=str(key)) as app:
        assert app.running.tls is not None
        pin = app.running.tls.certificate.pin
        assert netns.host_ip in app.running.tls.certificate.names  # the host it listens on
        job_id = await _held_job_tls(app, cert)
        before = app.snapshot()
        path = f"/v1/jobs/{job_id}/release"
        _, out = await netns.curl("-w", "\n%{http_code}", "-X", "POST", "-H", AUTH, _url(app, path))
        assert out.endswith("\n426"), out
        assert app.snapshot() == before
        pinned = ["-k", "--pinnedpubkey", pin]
        _, out = await netns.curl(
            "-w", "\n%{http_code}", *pinned, "-X", "POST", "-H", AUTH, _url(app, path, "https")
        )
        assert out.endswith("\n200"), out
        assert await _state(app, job_id) == "RELEASED"
        _, out = await netns.curl("--cacert", str(cert), _url(app, "/healthz", "https"))
        assert json.loads(out)["status"] == "ok"  # the certificate names the LAN address


async def _held_job_tls(app: Appliance, cert: Path) -> str:
    form = aiohttp.FormData()
    form.add_field("metadata", '{"owner":"ann","pool":"lobby"}', content_type="application/json")
    form.add_field("document", make_pdf(), content_type="application/pdf", filename="b.pdf")
    headers = {"Authorization": f"Bearer {KIOSK_TOKEN}", "Idempotency-Key": "lan-tls-0001"}
    ctx = ssl.create_default_context(cafile=str(cert))
    url = _url(app, "/v1/jobs", "https")
    async with app.http.post(url, data=form, headers=headers, ssl=ctx) as r:
        assert r.status == 201, await r.text()
        return str((await r.json())["id"])
