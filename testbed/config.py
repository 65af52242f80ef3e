"""Appliance configs for tests and benchmarks: tokens, a three-printer config, TOML text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from edgeprint.api.auth import token_digest
from testbed.rig import Rig

KIOSK_TOKEN = "kiosk-token-for-tests"
TECH_TOKEN = "tech-token-for-tests"


def config_dict(data_dir: Path, **server: Any) -> dict[str, Any]:
    """A config with printers 01 and 02 in pool 'lobby', 03 alone, a kiosk and a tech token."""
    return {
        # Load tests send thousands of requests from one token: the per-token limit is
        # raised here and tested on its own (tests/test_hostile.py).
        "server": {
            "host": "127.0.0.1",
            "port": 0,
            "data_dir": str(data_dir),
            "rate_limit": "1000000/second",
            **server,
        },
        "printers": [
            {"name": "printer-01", "uri": "ipp://127.0.0.1:1/ipp/print", "pool": "lobby"},
            {"name": "printer-02", "uri": "ipp://127.0.0.1:2/ipp/print", "pool": "lobby"},
            {"name": "printer-03", "uri": "ipp://127.0.0.1:3/ipp/print"},
        ],
        # DNS-SD is tested on its own (tests/test_ipp_advertise.py): test appliances stay quiet.
        "ipp": {"advertise": False},
        "tokens": [
            {"name": "kiosk-1", "role": "kiosk", "sha256": token_digest(KIOSK_TOKEN)},
            {"name": "tech-1", "role": "tech", "sha256": token_digest(TECH_TOKEN)},
        ],
    }


#: Fast dispatch settings for tests (seconds).
FAST_DISPATCH = {
    "poll_interval_min_s": 0.005,
    "poll_interval_max_s": 0.05,
    "idle_probe_interval_s": 0.5,
    "unreachable_retry_max_s": 0.2,
    "busy_backoff_s": 0.02,
    "retry_base_s": 0.05,
    "retry_max_s": 0.2,
    "request_timeout_s": 2.0,
    "upload_timeout_s": 5.0,
}


def rig_config(
    data_dir: Path, rig: Rig, pool: str | None = "lobby", **dispatch: Any
) -> dict[str, Any]:
    """A config dict whose printers are the rig's (all in ``pool``), with fast dispatch."""
    cfg = config_dict(data_dir)
    cfg["printers"] = [
        {"name": p.name, "uri": p.uri, **({"pool": pool} if pool else {})} for p in rig
    ]
    cfg["dispatch"] = {**FAST_DISPATCH, **dispatch}
    return cfg


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    return json.dumps(str(v))


def to_toml(data: dict[str, Any]) -> str:
    """A TOML text for a config dict of tables and arrays of tables (enough for our configs)."""
    lines: list[str] = []
    for key, value in data.items():
        if isinstance(value, dict):
            lines.append(f"[{key}]")
            lines += [f"{k} = {_toml_value(v)}" for k, v in value.items()]
        else:
            for item in value:
                lines.append(f"[[{key}]]")
                lines += [f"{k} = {_toml_value(v)}" for k, v in item.items()]
        lines.append("")
    return "\n".join(lines)
