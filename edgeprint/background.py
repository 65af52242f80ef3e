"""A task that runs for the duration of a block: started on entry, cancelled and awaited on
exit (its CancelledError is swallowed; any other exception it ended with is raised)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Coroutine
from typing import Any


@contextlib.asynccontextmanager
async def running(coro: Coroutine[Any, Any, object], name: str) -> AsyncIterator[asyncio.Task[Any]]:
    """Run ``coro`` as the task ``name`` while in the block."""
    task = asyncio.create_task(coro, name=name)
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
