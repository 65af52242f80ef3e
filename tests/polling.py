"""The tests' one way to wait for something that has no event to await: poll it with a deadline.

A test that waits for a printer's log, a file on disk, a job's state or a metric
calls :func:`eventually` (coroutines) or :func:`eventually_sync` (threads), never a
bare ``asyncio.sleep`` standing in for synchronisation. Both are the testbed's
:mod:`testbed.polling` (which rigs and load runs use), failing the test at the deadline.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, overload

import pytest

from testbed.polling import EVERY_S, TimedOut, What, until, until_sync

T = TypeVar("T")


@overload
async def eventually(
    check: Callable[[], Awaitable[T | None]],
    what: What,
    *,
    timeout_s: float = ...,
    every_s: float = ...,
) -> T: ...


@overload
async def eventually(
    check: Callable[[], T | None], what: What, *, timeout_s: float = ..., every_s: float = ...
) -> T: ...


async def eventually(
    check: Callable[[], Any], what: What, *, timeout_s: float = 10.0, every_s: float = EVERY_S
) -> Any:
    """``check()`` (plain or async) until it returns something truthy, which is returned.

    Fails the test after ``timeout_s`` naming ``what`` (or what ``what()`` says then, e.g.
    the tail of a printer's log) and the last value seen. ``every_s``: the pause between
    looks, longer for a check that is not cheap (a request per job, a process run).
    """
    try:
        return await until(check, what, timeout_s=timeout_s, every_s=every_s)
    except TimedOut as exc:
        pytest.fail(str(exc))


def eventually_sync(
    check: Callable[[], T | None], what: What, *, timeout_s: float = 10.0, every_s: float = EVERY_S
) -> T:
    """:func:`eventually` for code outside an event loop (blocks the calling thread)."""
    try:
        return until_sync(check, what, timeout_s=timeout_s, every_s=every_s)
    except TimedOut as exc:
        pytest.fail(str(exc))
