"""Per-token request limits (``server.rate_limit``): exact moving windows in memory.

The spec is the ``limits`` library's notation (``"50/second;1000/minute"``,
parsed and validated with it); the counting is a deque of hit times per token
and limit: a hit is allowed when fewer than ``amount`` hits fell in the last
``expiry`` seconds, as ``limits``' moving window decides, at O(1) per hit and
with no lock, task or thread (the event loop is the only caller). Forgotten at
restart.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable

import limits

from edgeprint import errors


class TokenRateLimiter:
    """Counts requests per token name against every limit in ``spec``.

    ``spec`` is the ``limits`` notation, e.g. ``"50/second;1000/minute"``
    (validated by the config); ``clock`` gives seconds (monotonic).
    """

    def __init__(self, spec: str, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        #: (token, limit) → the times of its hits still inside that limit's window.
        self._hits: dict[tuple[str, str], deque[float]] = {}
        self.reconfigure(spec)

    def reconfigure(self, spec: str) -> None:
        """Count against ``spec`` from the next request on (a config reload); a limit that
        stays the same keeps the requests it counted, a new one starts empty."""
        self.spec = spec
        items = limits.parse_many(spec)
        self._limits = [(str(item), item.amount, float(item.get_expiry())) for item in items]

    async def hit(self, token_name: str) -> None:
        """Count one request; raises errors.RateLimited (with Retry-After seconds) when over."""
        now = self._clock()
        for name, amount, expiry_s in self._limits:
            hits = self._hits.get((token_name, name))
            if hits is None:
                hits = self._hits[(token_name, name)] = deque()
            while hits and hits[0] < now - expiry_s:
                hits.popleft()
            if len(hits) >= amount:
                retry_after = max(1, math.ceil(hits[len(hits) - amount] + expiry_s - now))
                raise errors.RateLimited(name, retry_after)
            hits.append(now)
