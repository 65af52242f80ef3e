"""The tests' one way to wait for something that has no event to await: poll it with a deadline.

A test that waits for a printer's log, a file on disk, a job's state or a metric
calls :func:`eventually` (coroutines) or :func:`eventually_sync` (threads), never a
bare ``asyncio.sleep`` standing in for synchronisation.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import NoReturn, TypeVar

import pytest

T = TypeVar("T")
What = str | Callable[[], str]

#: Between two looks: short, as most conditions are cheap to check.
EVERY_S = 0.01


async def eventually(
    check: Callable[[], T | Awaitable[T]],
    what: What,
    *,
    timeout_s: float = 10.0,
    every_s: float = EVERY_S,
) -> T:
    """``check()`` (plain or async) until it returns something truthy, which is returned.

    Fails the test after ``timeout_s`` naming ``what`` (or what ``what()`` says then, e.g.
    the tail of a printer's log) and the last value seen. ``every_s``: the pause between
    looks, longer for a check that is not cheap (a request per job, a process run).
    """
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value  # type: ignore[return-value]
        if time.monotonic() >= deadline:
            _fail(timeout_s, what, value)
        await asyncio.sleep(every_s)


def eventually_sync(
    check: Callable[[], T], what: What, *, timeout_s: float = 10.0, every_s: float = EVERY_S
) -> T:
    """:func:`eventually` for code outside an event loop (blocks the calling thread)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() >= deadline:
            _fail(timeout_s, what, value)
        time.sleep(every_s)


def _fail(timeout_s: float, what: What, value: object) -> NoReturn:
    said = what() if callable(what) else what
    pytest.fail(f"timed out after {timeout_s:g} s waiting for {said} (last: {value!r:.300})")
