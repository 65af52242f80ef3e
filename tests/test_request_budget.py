"""A printer's request budget (printers.transport.RequestBudget): a token bucket whose bound
holds by construction, and which reports each request it held back exactly once."""

from __future__ import annotations

import asyncio

from edgeprint.printers.transport import RequestBudget


async def test_a_burst_passes_at_once_and_each_request_past_it_is_counted_once_as_held() -> None:
    held: list[int] = []
    budget = RequestBudget(rate=200.0, burst=3.0, on_held=lambda: held.append(1))
    loop = asyncio.get_running_loop()
    started = loop.time()
    for _ in range(3):
        await budget.take()
    assert held == []  # the burst: nobody waits
    await asyncio.gather(*(budget.take() for _ in range(4)))
    assert len(held) == 4  # four held back, each reported once however long it waited
    # the bound: 3 at once, then 200 a second — the 4 more took at least 4/200 s
    assert loop.time() - started >= 4 / 200 - 1e-3


async def test_a_budget_without_a_listener_still_holds_requests_back() -> None:
    budget = RequestBudget(rate=500.0, burst=1.0)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await asyncio.gather(*(budget.take() for _ in range(3)))
    assert loop.time() - started >= 2 / 500 - 1e-3
