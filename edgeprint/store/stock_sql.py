"""The claim's stock condition: SQL over a job's ``page_*`` columns (see ``edgeprint.stock``).

A printer claims a job only when its ready stock fits the job's pages; a pool job that a
healthy peer of the pool fits exactly is left to that peer unless this printer fits it
exactly too (a pool prefers an exact fit). A job whose sizes are not known fits anywhere.
The sizes are integers edgeprint computed (hundredths of a millimetre), written into the
statement as literals: the condition's shape varies with the number of stocks, and no
caller's text ever reaches it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from edgeprint.stock import Stock, StockView

_UNKNOWN = "page_short_min IS NULL"


def _exact(s: Stock, tol: int) -> str:
    return (
        f"(page_short_min >= {int(s.short) - tol} AND page_short_max <= {int(s.short) + tol} "
        f"AND page_long_min >= {int(s.long) - tol} AND page_long_max <= {int(s.long) + tol})"
    )


def _covers(s: Stock, tol: int) -> str:
    return f"(page_short_max <= {int(s.short) + tol} AND page_long_max <= {int(s.long) + tol})"


def _any(parts: Sequence[str]) -> str:
    return "(" + " OR ".join(parts) + ")" if parts else "FALSE"


@dataclass(frozen=True, slots=True)
class StockCondition:
    """The conditions on a claimable job: named for this printer, and a pool job."""

    own: str
    pool: str

    @classmethod
    def anything(cls) -> StockCondition:
        return cls("TRUE", "TRUE")


def stock_condition(
    mine: StockView | None, peers: Sequence[StockView], tolerance_hmm: int
) -> StockCondition:
    """The condition for a printer with ``mine`` ready (None or empty: not known) whose
    healthy pool peers have ``peers`` ready."""
    tol = int(tolerance_hmm)
    if mine is None or not mine.known:
        mine_exact, mine_other = "FALSE", "TRUE"
    else:
        mine_exact = _any([_exact(s, tol) for s in mine.stocks])
        fits = [mine.fit_of(s) for s in mine.stocks]
        if "scale" in fits:
            mine_other = "TRUE"
        else:
            mine_other = _any(
                [_covers(s, tol) for s, f in zip(mine.stocks, fits, strict=True) if f == "center"]
            )
    peers_exact = _any([_exact(s, tol) for v in peers for s in v.stocks])
    own = f"({_UNKNOWN} OR {mine_exact} OR {mine_other})"
    pool = f"({_UNKNOWN} OR {mine_exact} OR ({mine_other} AND NOT {peers_exact}))"
    return StockCondition(own, pool)
