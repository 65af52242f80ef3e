"""The served certificate at start, at reload and near its end (issue 26).

- a pair that cannot be served stops ``edgeprint serve`` with the reason (exit 1, one line);
- every SIGHUP reads the files again: a good pair is served to new connections at once while
  an upload in flight finishes on its old connection; a bad pair is refused with its reason
  and the running certificate stays;
- ``edgeprint_tls_certificate_expiry_timestamp_seconds`` and a warning when fewer than 30
  days are left (at start, at reload, and while running).
"""

from __future__ import annotations

import asyncio
import datetime
import json
import logging
import ssl
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from edgeprint import certificates
from edgeprint.config import parse_config
from edgeprint.sighup import reload_certificate
from edgeprint.tls_runtime import ServedCertificate
from testbed.config import TECH_TOKEN, config_dict, to_toml
from testbed.pdfs import make_pdf
from tests.conftest import Appliance
from tests.polling import eventually
from tests.test_reload import Appliance as ReloadedProcess
from tests.test_slow_clients import document_part_start, read_response, upload_head
from tests.test_tls_serve import served_fingerprint

NAMES = ["localhost", "127.0.0.1"]
DAY = datetime.timedelta(days=1)


def pair(folder: Path, stem: str, **kw: Any) -> certificates.Certificate:
    """A self-signed pair ``folder/stem.crt``, ``folder/stem.key``."""
    return certificates.make_self_signed(
        folder / f"{stem}.crt", folder / f"{stem}.key", NAMES, **kw
    )


def files_server(cert: Path, key: Path, **server: Any) -> dict[str, Any]:
    return {"tls": "files", "cert_file": str(cert), "key_file": str(key), **server}


# --- refused at start ---------------------------------------------------------------------------


def _broken(tmp_path: Path, how: str) -> tuple[Path, Path, Path, str]:
    """A cert and key broken ``how``; the file and the reason the refusal must name."""
    good = pair(tmp_path, "good")
    if how == "mismatched-key":
        other = pair(tmp_path, "other")
        reason = f"this key does not belong to the certificate {good.cert_file}"
        return good.cert_file, other.key_file, other.key_file, reason
    if how == "expired":
        past = datetime.datetime.now(datetime.UTC) - 10 * DAY
        old = pair(tmp_path, "old", now=past, days=2)
        return (
            old.cert_file,
            old.key_file,
            old.cert_file,
            f"expired on {old.not_after:%Y-%m-%d %H:%M} UTC",
        )
    if how == "not-pem":
        bad = tmp_path / "bad.crt"
        bad.write_bytes(b"this is not a certificate\n")
        return bad, good.key_file, bad, "not a PEM certificate"
    missing = tmp_path / "missing.crt"
    return missing, good.key_file, missing, "no certificate file here"


@pytest.mark.parametrize("how", ["mismatched-key", "expired", "not-pem", "missing"])
def test_a_pair_that_cannot_be_served_stops_the_start_with_its_reason(
    tmp_path: Path, how: str
) -> None:
    cert, key, named, reason = _broken(tmp_path, how)
    path = tmp_path / "config.toml"
    path.write_text(to_toml(config_dict(tmp_path / "data", **files_server(cert, key))))
    proc = subprocess.run(
        [sys.executable, "-m", "edgeprint", "serve", "--config", str(path)],
        capture_output=True,
        timeout=60,
        text=True,
    )
    assert proc.returncode == 1, proc.stderr
    assert f"edgeprint: cannot serve TLS: {named}: {reason}\n" in proc.stderr
    logged = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    refused = [rec for rec in logged if rec.get("event") == "tls_refused"]
    assert len(refused) == 1, proc.stdout
    assert refused[0]["reason"] == reason
    assert refused[0]["message"] == f"cannot serve TLS: {named}: {reason}"
    assert not (tmp_path / "data" / "edgeprint.sqlite3").exists()  # nothing was opened


# --- reload: new connections get the new pair, what is in flight keeps going -------------------


async def test_reload_serves_a_good_new_pair_to_new_connections_and_keeps_an_upload_going(
    make_appliance: Callable[..., Any], tmp_path: Path
) -> None:
    first = pair(tmp_path, "served")
    cfg_server = files_server(first.cert_file, first.key_file, body_timeout_s=30.0)
    async with make_appliance(**cfg_server) as app:
        port = app.running.port
        ctx = ssl.create_default_context(cafile=str(first.cert_file))
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=ctx)
        try:
            # An upload in progress on a connection made with the first certificate: the
            # document arrives in pieces until it is being staged; the rest waits.
            start, document = document_part_start(), make_pdf()[64:]
            tail = b"\r\n--slowclientboundary--\r\n"
            writer.write(upload_head(len(start) + len(document) + len(tail), key="reload-0001"))
            writer.write(start)
            sent = await _until_staged(app, writer, document)

            # The renewed pair replaces the files; a reload serves it to new connections.
            renewed = pair(tmp_path, "renewed")
            first.cert_file.write_bytes(renewed.cert_file.read_bytes())
            first.key_file.write_bytes(renewed.key_file.read_bytes())
            assert reload_certificate(app.running.tls, app.config)
            assert await asyncio.to_thread(served_fingerprint, port) == renewed.fingerprint

            # The upload finishes on its old connection, with its old certificate.
            old_peer = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
            old = certificates.x509.load_der_x509_certificate(old_peer)
            assert certificates.fingerprint_of(old) == first.fingerprint
            writer.write(document[sent:] + tail)
            status, _, body = await read_response(reader)
            assert status == 201, body
            assert json.loads(body)["state"] == "HELD"
        finally:
            writer.close()


async def _until_staged(app: Appliance, writer: asyncio.StreamWriter, document: bytes) -> int:
    """Send ``document`` 16 bytes at a time until the appliance stages it; the bytes sent."""
    deadline = time.monotonic() + 10
    for sent in range(0, len(document) - 16, 16):
        if any((app.data_dir / "spool" / "tmp").iterdir()):
            return sent
        assert time.monotonic() < deadline, "the upload was not staged"
        writer.write(document[sent : sent + 16])
        await writer.drain()
        await asyncio.sleep(0.01)  # polling the spool for a condition, bounded by the deadline
    raise AssertionError("the whole document went without being staged")


async def test_reload_refuses_a_bad_pair_and_the_running_certificate_stays(
    make_appliance: Callable[..., Any], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    first = pair(tmp_path, "served")
    async with make_appliance(**files_server(first.cert_file, first.key_file)) as app:
        other = pair(tmp_path, "other")
        first.key_file.write_bytes(other.key_file.read_bytes())  # a key of another certificate
        with caplog.at_level(logging.ERROR, logger="edgeprint.server"):
            assert not reload_certificate(app.running.tls, app.config)
        reason = f"this key does not belong to the certificate {first.cert_file}"
        assert [r.getMessage() for r in caplog.records if r.name == "edgeprint.server"] == [
            f"TLS certificate reload refused: {first.key_file}: {reason}; "
            "the running certificate stays"
        ]
        assert app.running.tls is not None
        assert app.running.tls.certificate.fingerprint == first.fingerprint
        assert await asyncio.to_thread(served_fingerprint, app.running.port) == first.fingerprint
        async with app.http.get(
            f"https://127.0.0.1:{app.running.port}/healthz",
            ssl=ssl.create_default_context(cafile=str(first.cert_file)),
        ) as r:
            assert r.status == 200


def test_sighup_reads_the_files_again_even_when_the_config_did_not_change(tmp_path: Path) -> None:
    """A real ``edgeprint serve``: SIGHUP with a broken key keeps the certificate (log line
    with the reason), SIGHUP with a renewed pair serves it at once; the config never changed."""
    first = pair(tmp_path, "served")
    cfg = config_dict(tmp_path / "data", **files_server(first.cert_file, first.key_file))
    with ReloadedProcess(tmp_path, cfg).running() as proc:
        port = proc.server.port
        assert served_fingerprint(port) == first.fingerprint

        first.key_file.write_bytes(b"garbage\n")
        offset = proc.server.log_path.stat().st_size
        assert proc.reload(cfg)["event"] == "config_reloaded"
        refused = proc.event(offset, {"tls_reload_refused"}, 10)
        assert refused["reason"] == "not a PEM private key"
        assert served_fingerprint(port) == first.fingerprint

        renewed = pair(tmp_path, "renewed")
        first.cert_file.write_bytes(renewed.cert_file.read_bytes())
        first.key_file.write_bytes(renewed.key_file.read_bytes())
        offset = proc.server.log_path.stat().st_size
        proc.reload(cfg)
        reloaded = proc.event(offset, {"tls_certificate_reloaded", "tls_reload_refused"}, 10)
        assert reloaded["event"] == "tls_certificate_reloaded"
        assert reloaded["fingerprint"] == renewed.fingerprint
        assert served_fingerprint(port) == renewed.fingerprint


def _audit_rows(port: int, cafile: Path) -> list[dict[str, Any]]:
    """GET /v1/audit?action=config-reload over TLS, newest first."""
    import urllib.request

    request = urllib.request.Request(
        f"https://127.0.0.1:{port}/v1/audit?action=config-reload",
        headers={"Authorization": f"Bearer {TECH_TOKEN}"},
    )
    ctx = ssl.create_default_context(cafile=str(cafile))
    with urllib.request.urlopen(request, context=ctx, timeout=10) as answer:
        rows: list[dict[str, Any]] = json.load(answer)["entries"]
        return rows


def test_a_refused_certificate_at_sighup_is_a_refused_audit_row(tmp_path: Path) -> None:
    """Finding 3: a SIGHUP whose certificate was refused was audited "done / nothing changed".
    Now one row, ``refused``, with the file and the reason (never key material); the audit
    log line names the config file once (not "config config")."""
    first = pair(tmp_path, "served")
    cfg = config_dict(tmp_path / "data", **files_server(first.cert_file, first.key_file))
    with ReloadedProcess(tmp_path, cfg).running() as proc:
        port = proc.server.port
        secret = first.key_file.read_bytes()
        other = pair(tmp_path, "other")
        first.key_file.write_bytes(other.key_file.read_bytes())  # a key of another certificate
        offset = proc.server.log_path.stat().st_size
        proc.reload(cfg)
        audit = proc.event(offset, {"audit"}, 10)
        assert audit["message"] == "audit: signal config-reload config config.toml: refused"
        rows = _audit_rows(port, first.cert_file)
        reason = "this key does not belong to the certificate served.crt"
        assert [
            (r["actor"], r["target_kind"], r["target"], r["outcome"], r["detail"]) for r in rows
        ] == [
            (
                "signal",
                "config",
                "config.toml",
                "refused",
                f"nothing changed; certificate refused: served.key: {reason}",
            )
        ]
        assert served_fingerprint(port) == first.fingerprint
        # A good pair again: done.
        first.key_file.write_bytes(secret)
        proc.reload(cfg)
        newest = _audit_rows(port, first.cert_file)[0]
        assert (newest["outcome"], newest["detail"]) == ("done", "nothing changed")
        log_text = proc.server.log_path.read_text()
        for key in (secret, other.key_file.read_bytes()):
            body = b"".join(key.splitlines()[1:-1]).decode()
            assert body[:40] not in log_text


# --- expiry: metric and warnings ----------------------------------------------------------------


async def test_expiry_is_a_metric_and_a_warning_within_30_days(
    make_appliance: Callable[..., Any], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    soon = pair(tmp_path, "soon", days=10)
    with caplog.at_level(logging.WARNING, logger="edgeprint.tls_runtime"):
        async with make_appliance(**files_server(soon.cert_file, soon.key_file)) as app:
            url = f"https://127.0.0.1:{app.running.port}/metrics"
            ctx = ssl.create_default_context(cafile=str(soon.cert_file))
            headers = {"Authorization": f"Bearer {TECH_TOKEN}"}
            async with app.http.get(url, ssl=ctx, headers=headers) as r:
                assert r.status == 200
                text = await r.text()
    assert _gauge(text) == soon.not_after.timestamp()
    warnings = [r for r in caplog.records if r.name == "edgeprint.tls_runtime"]
    assert len(warnings) == 1
    message = warnings[0].getMessage()
    assert message.startswith(f"the TLS certificate {soon.cert_file} expires in ")
    assert message.endswith(f" days ({soon.not_after:%Y-%m-%d %H:%M} UTC): renew it and reload")
    assert 9.9 <= warnings[0].__dict__["days_left"] <= 10.0


def _gauge(text: str) -> float:
    for line in text.splitlines():
        if line.startswith("edgeprint_tls_certificate_expiry_timestamp_seconds "):
            return float(line.split()[1])
    raise AssertionError("no edgeprint_tls_certificate_expiry_timestamp_seconds")


async def test_a_certificate_close_to_its_end_is_warned_of_while_running(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    fresh = pair(tmp_path, "fresh")
    server = parse_config(config_dict(tmp_path, **files_server(fresh.cert_file, fresh.key_file)))
    served = ServedCertificate.start(server.server)
    assert not served.warn_if_expiring()
    assert served.warn_if_expiring(fresh.not_after - 29 * DAY)
    soon = pair(tmp_path, "soon", days=5)
    server = parse_config(config_dict(tmp_path, **files_server(soon.cert_file, soon.key_file)))
    with caplog.at_level(logging.WARNING, logger="edgeprint.tls_runtime"):
        served = ServedCertificate.start(server.server)
        watching = asyncio.create_task(served.watch(every_s=0.01))
        try:
            await eventually(
                lambda: len([r for r in caplog.records if r.levelno == logging.WARNING]) >= 3,
                "the start's warning and two of the watch's",
            )
        finally:
            watching.cancel()


def test_cert_files_and_allow_plain_http_are_live_keys_and_the_tls_mode_is_not(
    tmp_path: Path,
) -> None:
    from edgeprint.reload import restart_keys

    def cfg(**server: Any) -> Any:
        return parse_config(config_dict(tmp_path, **server))

    files = files_server(tmp_path / "a.crt", tmp_path / "a.key")
    moved = files_server(tmp_path / "b.crt", tmp_path / "b.key", allow_plain_http=True)
    assert restart_keys(cfg(**files), cfg(**moved)) == []
    assert restart_keys(cfg(**files), cfg(tls="off")) == ["server.tls"]
    assert restart_keys(cfg(), cfg(tls="self-signed")) == ["server.tls"]


async def test_a_box_serving_no_tls_exposes_0(app: Appliance) -> None:
    """The alert ignores 0 (ops/edgeprint.rules.yml): a plain box never looks expired."""
    registry = app.running.service.metrics.registry
    value = registry.get_sample_value("edgeprint_tls_certificate_expiry_timestamp_seconds")
    assert value == 0.0
    assert app.running.tls is None
