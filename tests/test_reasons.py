"""printer-state-reasons read by their severity (RFC 8011 §5.4.12), known to edgeprint or not:
the pure rule of what keeps a printer from new work, over keywords × suffixes."""

from __future__ import annotations

import hypothesis
import hypothesis.strategies as st

from edgeprint.printers import reasons
from edgeprint.printers.health import STALL_REASONS, Health, HealthSettings
from edgeprint.printers.ipp import PrinterStatus

IDLE, PROCESSING, STOPPED = 3, 4, 5
SUFFIXES = ("", "-report", "-warning", "-error")

#: Keywords: every registered one, and others a printer may send (vendor, garbage).
UNKNOWN = st.from_regex(r"[a-z][a-z0-9.]{0,12}(-[a-z0-9]{1,8}){0,3}", fullmatch=True).filter(
    lambda k: k != "none" and k not in reasons.KNOWN and not k.endswith(reasons.SUFFIXES)
)
KEYWORDS = st.one_of(st.sampled_from(sorted(reasons.KNOWN)), UNKNOWN)
MESSAGES = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)


def status(state: int, values: tuple[str, ...], message: str = "") -> PrinterStatus:
    return PrinterStatus(
        state=state, reasons=values, message=message, queued_job_count=0,
        operations=frozenset({"Create-Job", "Send-Document"}), formats=frozenset(),
        copies_supported=True, accepting_jobs=True, up_time_s=1, attributes={},
    )  # fmt: skip


def probed(state: int, values: tuple[str, ...], message: str = "") -> Health:
    h = Health(HealthSettings(stopped_grace_s=3600))
    h.on_probe(status(state, values, message), now=0)
    return h


@hypothesis.given(keyword=KEYWORDS, suffix=st.sampled_from(SUFFIXES), message=MESSAGES)
def test_an_idle_printer_is_kept_from_new_work_by_an_error_alone(
    keyword: str, suffix: str, message: str
) -> None:
    """Idle with one reason: -error or a bare keyword blocks, known or not, and the health
    reason names the value and carries printer-state-message verbatim; -warning and -report
    never block by themselves."""
    value = keyword + suffix
    h = probed(IDLE, (value,), message)
    blocks = suffix in ("", "-error")
    assert h.healthy is not blocks, h.reason
    if blocks:
        assert h.reason is not None
        assert h.reason.startswith("printer-state-reasons: ")
        assert f"({value})" in h.reason
        assert reasons.words(value) in h.reason
        assert message.strip() in h.reason


@hypothesis.given(
    keyword=KEYWORDS, suffix=st.sampled_from(SUFFIXES), state=st.sampled_from((PROCESSING, STOPPED))
)
def test_a_busy_printer_is_also_kept_by_a_stall_reason_at_any_severity(
    keyword: str, suffix: str, state: int
) -> None:
    """Processing (or stopped) with one reason: blocked by an error, or by a jam, an open door or
    missing media at any severity (the job in hand is stalled); a warning about anything else
    does not block."""
    h = probed(state, (keyword + suffix,))
    blocks = suffix in ("", "-error") or keyword in STALL_REASONS
    assert h.healthy is not blocks, h.reason
    if blocks and suffix in ("-report", "-warning"):
        assert h.reason is not None
        assert "the job in hand is stalled" in h.reason


@hypothesis.given(values=st.lists(st.tuples(KEYWORDS, st.sampled_from(SUFFIXES)), max_size=5))
def test_one_error_among_warnings_blocks(values: list[tuple[str, str]]) -> None:
    """Several reasons: the printer is blocked exactly when one of them is an error."""
    shown = tuple(k + s for k, s in values)
    h = probed(IDLE, shown)
    assert h.healthy is all(s in ("-report", "-warning") for _, s in values), h.reason


@hypothesis.given(keyword=KEYWORDS, suffix=st.sampled_from(SUFFIXES))
def test_each_value_is_described_with_its_severity_and_whether_it_is_known(
    keyword: str, suffix: str
) -> None:
    """describe(): the value verbatim, its keyword, its severity (bare → error), known for a
    registered keyword, and since when it was first seen."""
    value = keyword + suffix
    [r] = reasons.describe(("none", value), {value: 12.5})
    assert (r.value, r.keyword, r.known, r.since) == (
        value,
        keyword,
        keyword in reasons.KNOWN,
        12.5,
    )
    assert r.severity == (suffix[1:] if suffix else "error")
    assert r.words == reasons.words(value)
    if not r.known:
        article = "an" if r.severity == "error" else "a"  # "an error", "a warning"
        assert r.words == f"{article} {r.severity} edgeprint does not know ({keyword})"


def test_first_seen_keeps_the_time_of_a_value_still_shown_and_forgets_one_gone() -> None:
    """A value keeps the time it first showed; one gone and back starts again."""
    first = reasons.first_seen({}, ("other", "media-low-report"), now=10.0)
    assert first == {"other": 10.0, "media-low-report": 10.0}
    then = reasons.first_seen(first, ("other", "none"), now=20.0)
    assert then == {"other": 10.0}
    again = reasons.first_seen(then, ("other", "media-low-report"), now=30.0)
    assert again == {"other": 10.0, "media-low-report": 30.0}


def test_lprint_head_open_reads_as_an_unnamed_fault_with_the_message() -> None:
    """LPrint reports a Zebra's open head as a bare ``other``: blocked, in plain words."""
    h = probed(IDLE, ("other",), "Idle.")
    assert (h.healthy, h.reason) == (
        False,
        'printer-state-reasons: a fault the printer does not name (other); the printer says "Idle."',
    )
