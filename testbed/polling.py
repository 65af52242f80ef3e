"""One way to wait for what has no event to await: look again, with a deadline.

The testbed (rigs, load runs, shared by tests and benchmarks) calls :func:`until` or
:func:`until_sync` and turns :class:`TimedOut` into its own error where it has one (a
rig's RigError with its log tail); the tests call :func:`tests.polling.eventually`,
which is built on these and fails the test instead.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, overload

T = TypeVar("T")
What = str | Callable[[], str]

#: Between two looks: short, as most conditions are cheap to check.
EVERY_S = 0.01


class TimedOut(TimeoutError):
    """Nothing truthy within ``timeout_s``: ``what`` was awaited, ``last`` was seen."""

    def __init__(self, what: str, timeout_s: float, last: object) -> None:
        self.what = what
        self.timeout_s = timeout_s
        self.last = last
        super().__init__(
            f"timed out after {timeout_s:g} s waiting for {what} (last: {last!r:.300})"
        )


@overload
async def until(
    check: Callable[[], Awaitable[T | None]], what: What, *, timeout_s: float, every_s: float = ...
) -> T: ...


@overload
async def until(
    check: Callable[[], T | None], what: What, *, timeout_s: float, every_s: float = ...
) -> T: ...


async def until(
    check: Callable[[], Any], what: What, *, timeout_s: float, every_s: float = EVERY_S
) -> Any:
    """``check()`` (plain or async) until it returns something truthy, which is returned;
    ``every_s`` apart. Raises TimedOut after ``timeout_s`` (naming ``what``, or what
    ``what()`` says then), or whatever ``check`` raises (a process that died: stop now)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TimedOut(what() if callable(what) else what, timeout_s, value)
        await asyncio.sleep(every_s)


def until_sync(
    check: Callable[[], T | None], what: What, *, timeout_s: float, every_s: float = EVERY_S
) -> T:
    """:func:`until` for code outside an event loop (blocks the calling thread)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TimedOut(what() if callable(what) else what, timeout_s, value)
        time.sleep(every_s)
