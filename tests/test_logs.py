"""Logs are JSON lines and never carry a bearer token."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import hypothesis

from edgeprint.states import Action, JobState
from testbed.proc import ServeProcess
from tests.conftest import KIOSK_TOKEN, config_dict, to_toml


async def _raw(port: int, request: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    data = await asyncio.wait_for(reader.read(), timeout=10)
    writer.close()
    return data


async def test_a_token_in_an_oversized_header_is_not_logged(tmp_path: Path) -> None:
    """aiohttp rejects an over-long Authorization header; the log says so without the token."""
    cfg = tmp_path / "config.toml"
    cfg.write_text(to_toml(config_dict(tmp_path / "data")))
    server = ServeProcess(cfg, tmp_path / "serve.log")
    with server.start():
        header = f"Authorization: Bearer {KIOSK_TOKEN}{'A' * 9000}\r\n".encode()
        answer = await _raw(server.port, b"GET /v1/jobs HTTP/1.1\r\nHost: x\r\n" + header + b"\r\n")
        assert answer.split(b" ", 2)[1] == b"400"
        ok = await _raw(
            server.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        assert ok.startswith(b"HTTP/1.1 200")
        assert server.terminate() == 0
    lines = server.log_path.read_text().splitlines()
    assert KIOSK_TOKEN not in "\n".join(lines)
    records = [json.loads(line) for line in lines]  # every line is one JSON object
    assert any(r.get("event") == "http_bad_request" for r in records)


def test_a_log_line_is_one_json_object_with_its_fields_in_order() -> None:
    """A record becomes exactly the line the logs have always had: time, level, logger,
    message, exc_info, then the extra fields in the order given."""
    from edgeprint.logs import JsonLines

    record = logging.LogRecord(
        "edgeprint.x", logging.INFO, "f.py", 1, "job %s", ("released",), None
    )
    record.created = 1764596026.8045
    record.__dict__.update(event="job_released", job_id="ab", printer=None, n=3, u="é")
    assert JsonLines().format(record) == (
        '{"time": "2025-12-01T13:33:46.804Z", "level": "INFO", "logger": "edgeprint.x", '
        '"message": "job released", "event": "job_released", "job_id": "ab", "printer": null, '
        '"n": 3, "u": "\\u00e9"}'
    )
    try:
        raise ZeroDivisionError("division by zero")
    except ZeroDivisionError:
        import sys

        failed = logging.LogRecord("x", logging.ERROR, "f.py", 1, "boom", None, sys.exc_info())
    line = json.loads(JsonLines().format(failed))
    assert list(line) == ["time", "level", "logger", "message", "exc_info"]
    assert line["exc_info"].endswith("ZeroDivisionError: division by zero")


def test_rfc3339_ms_writes_what_datetime_writes() -> None:
    """The fast time format gives datetime's text for any unix time, rounding included."""
    import random
    from datetime import UTC, datetime

    from edgeprint.timefmt import rfc3339_ms

    rng = random.Random(18)
    edges = [0.0, -0.5, 1.9999995, 1.0000005, 1764596026.9999996, 1764596026.0005]
    spread = [rng.uniform(-1e9, 4e9) for _ in range(20000)]
    near = [float(rng.randrange(0, 4 * 10**9)) + rng.choice([0.9999995, 0.0005, 0.4999995])
            for _ in range(20000)]  # fmt: skip
    for ts in edges + spread + near:
        expected = datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds")
        assert rfc3339_ms(ts) == expected.replace("+00:00", "Z"), ts


#: What every LogRecord carries (``extra`` may not name them; taskName from Python 3.12 on).
_RECORD_ATTRS = {
    *logging.LogRecord("", 0, "", 0, "", None, None).__dict__,
    *("message", "asctime", "taskName"),
}
_JSON_SCALARS = (
    hypothesis.strategies.none()
    | hypothesis.strategies.booleans()
    | hypothesis.strategies.integers()
    | hypothesis.strategies.floats()  # NaN and infinities too
    | hypothesis.strategies.text()
)


@hypothesis.settings(max_examples=300, deadline=None)
@hypothesis.given(
    message=hypothesis.strategies.text(),
    extra=hypothesis.strategies.dictionaries(
        # extra may not name a LogRecord attribute (logging refuses), but may name a
        # leading key of the line ("time", "level", "logger"), whose value it then replaces
        hypothesis.strategies.text(max_size=8).filter(lambda k: k not in _RECORD_ATTRS)
        | hypothesis.strategies.sampled_from(["time", "level", "logger"]),
        _JSON_SCALARS
        | hypothesis.strategies.lists(_JSON_SCALARS, max_size=3)
        | hypothesis.strategies.sampled_from([JobState.HELD, Action.RELEASE, Path("/x")]),
        max_size=6,
    ),
)
def test_a_log_line_is_what_the_json_encoder_writes(message: str, extra: dict[str, object]) -> None:
    """The formatter's hand-written line is byte for byte json's encoding of the same object
    (every field, NaN, non-ASCII text, enums and objects written with str)."""
    from edgeprint.logs import JsonLines
    from edgeprint.timefmt import rfc3339_ms

    record = logging.getLogger("edgeprint.x").makeRecord(
        "edgeprint.x", logging.WARNING, "f.py", 1, message, (), None, extra=extra
    )
    expected: dict[str, object] = {
        "time": rfc3339_ms(record.created),
        "level": "WARNING",
        "logger": "edgeprint.x",
        "message": message,
        **extra,
    }
    assert JsonLines().format(record) == json.JSONEncoder(default=str).encode(expected)


def test_log_event_writes_the_event_and_its_fields_in_order() -> None:
    from edgeprint.logs import JsonLines, log_event

    logger = logging.getLogger("edgeprint.test_log_event")
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    keep = Keep()
    logger.addHandler(keep)
    logger.setLevel(logging.INFO)
    try:
        log_event(logger, "job_expired", job_id="j1", printer="p1")
        log_event(logger, "printer_stalled", message="printer is stalled", level=logging.WARNING)
        log_event(logger, "quiet", level=logging.DEBUG)  # below the level: not built
    finally:
        logger.removeHandler(keep)
    assert [r.getMessage() for r in records] == ["job expired", "printer is stalled"]
    assert [r.levelno for r in records] == [logging.INFO, logging.WARNING]
    line = json.loads(JsonLines().format(records[0]))
    assert list(line)[4:] == ["event", "job_id", "printer"]
    assert (line["event"], line["job_id"], line["printer"]) == ("job_expired", "j1", "p1")
