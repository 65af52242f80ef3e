"""Printer epochs: one printer's life as a sequence of lives (DESIGN §3).

A printer that restarts (a power cut, a firmware reboot) or is replaced begins a
new *epoch*: its job-ids start again, its history is gone, its times count from a
new zero. Everything edgeprint learnt in an earlier epoch (a job-id, a
time-at-creation, "it keeps history") is about another life of the printer, so
copies carry the epoch they were made in and are matched by job-id only within
it (:mod:`edgeprint.evidence`).

A new epoch begins when

- the printer is seen for the first time;
- ``printer-uuid`` changed (replaced, or reset to factory settings);
- ``printer-up-time`` went back, or advanced less than the time that passed since
  it was last seen (it restarted meanwhile, and has been up less long than that);
- ``printer-config-change-time`` went back (its clock started again);
- it answers again after being unreachable and cannot show that it did not
  restart (it reports no moving ``printer-up-time``).

The time that passed is measured on ``CLOCK_BOOTTIME`` while the box has not
rebooted (``boot_id`` unchanged: immune to wall-clock steps), else on the wall
clock. Pure: :func:`advance` returns the new record and, when a new epoch
began, why.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path

#: printer-up-time counts whole seconds: two readings t seconds apart differ by more than
#: t − 1 (each is truncated), so a reading that advanced less than that (with a margin)
#: comes from a clock that started again. A restart is therefore seen whenever the printer
#: had been up longer than this before it (no printer reboots faster).
UP_TIME_SLACK_S = 1.1
#: ... plus this share of the time that passed (clocks drift; the box may have slept).
UP_TIME_SLACK_SHARE = 0.02
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


@dataclass(frozen=True)
class Epoch:
    """A printer's current epoch and the last reading that kept it (as stored)."""

    number: int
    began_at: float  # unix seconds
    cause: str  # why it began, in words
    up_time_s: int | None  # printer-up-time at the last reading
    seen_at: float  # wall clock of that reading (unix seconds)
    boot_id: str  # the box's boot when it was read
    boot_s: float  # CLOCK_BOOTTIME then (seconds)
    printer_uuid: str | None = None
    config_change_time: int | None = None
    config_change_dt: str | None = None


@dataclass(frozen=True)
class Reading:
    """What one Get-Printer-Attributes answer said of the printer's life."""

    up_time_s: int | None
    printer_uuid: str | None
    config_change_time: int | None
    config_change_dt: str | None = None


@dataclass(frozen=True)
class Clock:
    """The box's clocks at one instant."""

    wall: float
    boot_id: str
    boot_s: float

    @classmethod
    def now(cls) -> Clock:
        return cls(
            wall=time.time(), boot_id=boot_id(), boot_s=time.clock_gettime(time.CLOCK_BOOTTIME)
        )


_BOOT_ID: str | None = None


def boot_id() -> str:
    """This boot's id (read once; "" where the kernel does not say)."""
    global _BOOT_ID
    if _BOOT_ID is None:
        try:
            _BOOT_ID = BOOT_ID.read_text().strip()
        except OSError:
            _BOOT_ID = ""
    return _BOOT_ID


def _elapsed(last: Epoch, asked: Clock) -> float:
    """Seconds at least between the printer's last reading and this one: from when the last
    answer arrived to when this request left (the printer read its clock in between)."""
    if last.boot_id and last.boot_id == asked.boot_id:
        return max(0.0, asked.boot_s - last.boot_s)
    return max(0.0, asked.wall - last.seen_at)


def restart_cause(
    last: Epoch,
    reading: Reading,
    asked: Clock,
    *,
    after_outage: bool,
    up_time_moves: bool | None,
) -> str | None:
    """Why ``reading`` shows a printer in another life than ``last``, or None (the same)."""
    if last.printer_uuid and reading.printer_uuid and last.printer_uuid != reading.printer_uuid:
        return f"printer-uuid changed ({last.printer_uuid} → {reading.printer_uuid})"
    up, was = reading.up_time_s, last.up_time_s
    if up is not None and was is not None:
        if up < was:
            return f"printer-up-time went back ({was} s → {up} s): it restarted"
        elapsed = _elapsed(last, asked)
        slack = UP_TIME_SLACK_S + UP_TIME_SLACK_SHARE * elapsed
        # the very reading again after a while: a frozen clock, not a printer that restarted
        # and ran exactly that long since
        if up_time_moves is not False and up != was and up + slack < was + elapsed:
            return (
                f"printer-up-time {up} s after {elapsed:.0f} s (was {was} s): "
                "it restarted meanwhile"
            )
    cfg, cfg_was = reading.config_change_time, last.config_change_time
    if cfg is not None and cfg_was is not None and cfg != cfg_was:
        return f"printer-config-change-time changed ({cfg_was} → {cfg}): another life"
    dt, dt_was = reading.config_change_dt, last.config_change_dt
    if dt and dt_was and dt != dt_was:
        return f"printer-config-change-date-time changed ({dt_was} → {dt}): another life"
    if after_outage and (up is None or up_time_moves is False):
        return (
            "answered again after being unreachable, and its printer-up-time cannot show "
            "it did not restart"
        )
    return None


def advance(
    last: Epoch | None,
    reading: Reading,
    clock: Clock,
    *,
    asked: Clock | None = None,
    after_outage: bool = False,
    up_time_moves: bool | None = None,
) -> tuple[Epoch, str | None]:
    """The epoch after ``reading`` (``asked``: when its request left; ``clock``: when its
    answer came), and the cause when a new one began (None: the same)."""
    if last is None:
        cause: str | None = "first seen"
        number = 1
    else:
        cause = restart_cause(
            last,
            reading,
            asked or clock,
            after_outage=after_outage,
            up_time_moves=up_time_moves,
        )
        number = last.number + 1 if cause else last.number
    if cause is not None:
        return (
            Epoch(
                number=number,
                began_at=clock.wall,
                cause=cause,
                up_time_s=reading.up_time_s,
                seen_at=clock.wall,
                boot_id=clock.boot_id,
                boot_s=clock.boot_s,
                printer_uuid=reading.printer_uuid,
                config_change_time=reading.config_change_time,
                config_change_dt=reading.config_change_dt,
            ),
            cause,
        )
    assert last is not None
    return (
        replace(
            last,
            up_time_s=reading.up_time_s,
            seen_at=clock.wall,
            boot_id=clock.boot_id,
            boot_s=clock.boot_s,
            printer_uuid=reading.printer_uuid or last.printer_uuid,
            config_change_time=reading.config_change_time,
            config_change_dt=reading.config_change_dt or last.config_change_dt,
        ),
        None,
    )
