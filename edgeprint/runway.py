"""A label roll's runway: labels left since the roll was changed, and when it runs out.

Pure: no I/O, time is a parameter. Label printers rarely report a level, so edgeprint
counts the labels it printed since the roll was changed against ``[[printers]]
labels_per_roll`` (DESIGN §4, "Supplies and runway"). A roll change is seen by
:meth:`Runway.seen` (the printer goes from media-empty to ready, or the media it has
ready changes) or told by a technician (:meth:`Runway.roll_changed`). What must survive
a restart of the appliance is :class:`Roll`; the printing rate is not kept (a restart
forecasts from what it has seen since).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

#: The forecast's rate is the labels printed in this many seconds before now.
RATE_WINDOW_S = 900.0
#: ... divided by the time seen, at least this long (a first label a second after start-up
#: is not 60 a minute).
MIN_RATE_SPAN_S = 60.0

CAUSE_EMPTY_TO_READY = "media-empty → ready"
CAUSE_MEDIA_CHANGED = "media-ready changed"
CAUSE_TECHNICIAN = "technician: media loaded"


@dataclass(frozen=True)
class Roll:
    """What is kept of a printer's roll across restarts."""

    #: Labels printed since the roll was changed (or since counting began).
    printed: int = 0
    #: When the roll was changed (unix seconds); None: not seen yet (counted from a full roll).
    changed_at: float | None = None
    #: The media-ready last seen (sorted), None before any answer carried it.
    media: tuple[str, ...] | None = None
    #: The printer said it was out of media in its last answer.
    empty: bool = False


@dataclass(frozen=True)
class RunwayView:
    """``GET /v1/printers``' ``runway``."""

    labels_left: int
    labels_per_roll: int
    per_minute: float
    minutes_left: float | None  # None: nothing printed lately (no rate to forecast from)

    def as_json(self) -> dict[str, int | float | None]:
        return {
            "labels_left": self.labels_left,
            "labels_per_roll": self.labels_per_roll,
            "per_minute": self.per_minute,
            "minutes_left": self.minutes_left,
        }


def labels_of(pages: int | None, copies: int, from_page: int | None = None) -> int:
    """The labels (impressions) a job makes: its pages (from ``from_page`` on) × copies."""
    n = max(1, pages or 1)
    if from_page is not None and from_page > 1:
        n = max(1, n - from_page + 1)
    return n * max(1, copies)


class Runway:
    """One printer's roll: count, roll changes and the forecast."""

    def __init__(
        self,
        labels_per_roll: int,
        *,
        started_at: float,
        roll: Roll | None = None,
    ) -> None:
        if labels_per_roll < 1:
            raise ValueError("labels_per_roll must be at least 1")
        self.labels_per_roll = labels_per_roll
        self.roll = roll or Roll()
        self._started_at = started_at
        self._recent: deque[tuple[float, int]] = deque()
        self._recent_total = 0

    @property
    def labels_left(self) -> int:
        return max(0, self.labels_per_roll - self.roll.printed)

    def printed(self, labels: int, now: float, *, live: bool = True) -> None:
        """``labels`` came out of the printer at ``now`` (a job settled DONE). Every label
        comes off the roll; only a live job's count in the rate (a rehearsal's do not
        forecast the morning: the rate starts again at go-live)."""
        if labels <= 0:
            return
        self.roll = Roll(
            self.roll.printed + labels, self.roll.changed_at, self.roll.media, self.roll.empty
        )
        if live:
            self._recent.append((now, labels))
            self._recent_total += labels

    def roll_changed(self, now: float) -> None:
        """A full roll was loaded at ``now``: the count starts again."""
        self.roll = Roll(0, now, self.roll.media, False)

    def seen(self, empty: bool, media: tuple[str, ...] | None, now: float) -> str | None:
        """A probe's answer: whether it says the printer is out of media, and its media-ready
        (None: the answer does not carry it). Returns why the roll was changed, if it was."""
        before = self.roll
        cause = None
        if before.empty and not empty:
            cause = CAUSE_EMPTY_TO_READY
        elif media is not None and before.media is not None and media and media != before.media:
            cause = CAUSE_MEDIA_CHANGED
        kept_media = before.media if media is None or not media else media
        if cause is not None:
            self.roll = Roll(0, now, kept_media, empty)
        else:
            self.roll = Roll(before.printed, before.changed_at, kept_media, empty)
        return cause

    def _prune(self, now: float) -> None:
        while self._recent and self._recent[0][0] <= now - RATE_WINDOW_S:
            self._recent_total -= self._recent.popleft()[1]

    def per_minute(self, now: float) -> float:
        """Labels a minute over the last ``RATE_WINDOW_S`` (or the time since start-up, when
        shorter, but at least :data:`MIN_RATE_SPAN_S`)."""
        self._prune(now)
        span = max(MIN_RATE_SPAN_S, min(RATE_WINDOW_S, now - self._started_at))
        return self._recent_total * 60.0 / span

    def view(self, now: float) -> RunwayView:
        rate = self.per_minute(now)
        left = self.labels_left
        minutes = None if rate <= 0 else left / rate
        return RunwayView(
            left,
            self.labels_per_roll,
            round(rate, 3),
            None if minutes is None else round(minutes, 2),
        )
