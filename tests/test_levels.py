"""Supply and media levels read from a probe's answer (edgeprint.printers.levels), garbage too."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from edgeprint.printers import levels
from edgeprint.printers.levels import MediaLevel, SupplyLevel

#: What ippeveprinter 2.4 answers (recorded from the rig's printer, paper "low").
IPPEVE: dict[str, Any] = {
    "printer-input-tray": [
        "type=sheetFeedAutoRemovableTray;mediafeed=0;mediaxfeed=0;maxcapacity=-2;level=-2;"
        "status=0;name=auto",
        "type=sheetFeedAutoRemovableTray;mediafeed=27940;mediaxfeed=21590;maxcapacity=250;"
        "level=10;status=0;name=main;",
        "type=sheetFeedManual;mediafeed=0;mediaxfeed=0;maxcapacity=1;level=-2;status=0;"
        "name=manual",
        "type=sheetFeedAutoNonRemovableTray;mediafeed=24130;mediaxfeed=10477;maxcapacity=25;"
        "level=5;status=0;name=by-pass-tray;",
    ],
    "printer-supply": [
        "index=1;class=receptacleThatIsFilled;type=wasteToner;unit=percent;maxcapacity=100;"
        "level=25;colorantname=unknown;",
        "index=2;class=supplyThatIsConsumed;type=toner;unit=percent;maxcapacity=100;level=75;"
        "colorantname=black;",
    ],
    "printer-supply-description": ["Toner Waste Tank", "Black Toner"],
    "media-ready": ["na_letter_8.5x11in", "na_number-10_4.125x9.5in"],
    "media-col-ready": [
        {"media-key": "na_letter_8.5x11in_main", "media-size-name": "na_letter_8.5x11in",
         "media-source": "main"},
        {"media-key": "na_number-10_4.125x9.5in_by-pass-tray",
         "media-size-name": "na_number-10_4.125x9.5in", "media-source": "by-pass-tray"},
    ],
}  # fmt: skip


def test_pwg_supplies_named_by_their_descriptions() -> None:
    """printer-supply rows become name/kind/percent, named by printer-supply-description."""
    assert levels.supply_levels(IPPEVE) == (
        SupplyLevel("Toner Waste Tank", "wasteToner", 25),
        SupplyLevel("Black Toner", "toner", 75),
    )


def test_trays_with_their_media_and_percent() -> None:
    """printer-input-tray levels of maxcapacity in percent (auto left out, unknown as None),
    each with the media media-col-ready puts in that source."""
    assert levels.media_levels(IPPEVE) == (
        MediaLevel("main", "na_letter_8.5x11in", 4),
        MediaLevel("manual", None, None),
        MediaLevel("by-pass-tray", "na_number-10_4.125x9.5in", 20),
    )


def test_one_sheet_left_is_not_zero_percent() -> None:
    """1 of 250 sheets rounds to 0 %, but a tray with paper never reads empty."""
    attrs = {"printer-input-tray": "type=x;maxcapacity=250;level=1;name=main"}
    assert levels.media_levels(attrs) == (MediaLevel("main", None, 1),)


def test_markers_when_no_printer_supply() -> None:
    """marker-names/levels/types (CUPS' names) when printer-supply says nothing; -1/-2/-3
    (unavailable, unknown, some left) are no level."""
    attrs = {
        "marker-names": ["Black", "Cyan", "Magenta"],
        "marker-levels": [40, -3, 101],
        "marker-types": ["toner", "toner", "toner"],
    }
    assert levels.supply_levels(attrs) == (
        SupplyLevel("Black", "toner", 40),
        SupplyLevel("Cyan", "toner", None),
        SupplyLevel("Magenta", "toner", None),
    )


def test_supply_levels_scaled_by_capacity_and_octets() -> None:
    """A level of another capacity is scaled; octetString bytes are read; a missing
    description falls back to colorant and type; duplicate names are made unique."""
    attrs = {
        "printer-supply": [
            b"type=ink;maxcapacity=200;level=50;colorantname=cyan;",
            "type=ink;maxcapacity=200;level=200;colorantname=cyan;",
        ],
    }
    assert levels.supply_levels(attrs) == (
        SupplyLevel("cyan ink", "ink", 25),
        SupplyLevel("cyan ink (2)", "ink", 100),
    )


GARBAGE: list[dict[str, Any]] = [
    {},
    {"printer-supply": None, "marker-names": None, "printer-input-tray": None},
    {"printer-supply": 42},
    {"printer-supply": ["nonsense", ";;;", "=", "level=abc;type="]},
    {"printer-supply": ["type=toner;level=-2;maxcapacity=100"], "printer-supply-description": 7},
    {"printer-supply": ["type=toner;level=500;maxcapacity=-1;unit=percent"]},
    {"marker-names": ["Black", "Cyan"], "marker-levels": [10]},
    {"marker-names": [1, None, b"\xff"], "marker-levels": ["x", True, 3]},
    {"printer-input-tray": [{"name": "main"}, b"\x00\x01", "name=;level=5", "level=9"]},
    {"printer-input-tray": "name=main;level=99999999999999999999;maxcapacity=0"},
    {"media-col-ready": ["x", {"media-source": 5}, {"media-source": "main"}]},
    {"media-ready": [None, 3, ""]},
]


def test_garbage_gives_fewer_rows_never_an_error() -> None:
    """Nonsense values are dropped, not guessed; nothing raises."""
    for attrs in GARBAGE:
        assert all(s.level_percent is None or 0 <= s.level_percent <= 100
                   for s in levels.supply_levels(attrs))  # fmt: skip
        assert all(m.level_percent is None or 0 <= m.level_percent <= 100
                   for m in levels.media_levels(attrs))  # fmt: skip
        levels.loaded_media(attrs)
        levels.media_empty((), attrs)
    assert levels.supply_levels({"printer-supply": ["nonsense", ";;;", "="]}) == ()
    assert levels.supply_levels({"marker-names": ["Black", "Cyan"], "marker-levels": [10]}) == ()
    assert levels.supply_levels(GARBAGE[5]) == (SupplyLevel("toner", "toner", None),)
    assert levels.media_levels(GARBAGE[9]) == (MediaLevel("main", None, None),)
    assert levels.loaded_media({"media-ready": [None, 3, ""]}) is None  # unreadable
    assert levels.loaded_media({"media-ready": None}) == ()  # no-value: nothing ready
    assert levels.supply_levels({"printer-supply": ["level=lots;type="]}) == ()


def test_names_and_rows_are_bounded() -> None:
    """Names are cut and rows capped: they become Prometheus labels."""
    attrs = {
        "marker-names": [f"{'x' * 500}{i}" for i in range(100)],
        "marker-levels": [50] * 100,
    }
    got = levels.supply_levels(attrs)
    assert len(got) == levels.MAX_ROWS
    assert all(len(s.name) <= levels.MAX_NAME for s in got)
    assert len({s.name for s in got}) == len(got)


_atoms = st.one_of(
    st.none(), st.booleans(), st.integers(), st.text(max_size=40), st.binary(max_size=40),
    st.dictionaries(st.text(max_size=12), st.text(max_size=12), max_size=3),
)  # fmt: skip
_values = st.one_of(_atoms, st.lists(_atoms, max_size=6))
_names = st.sampled_from(
    ["printer-supply", "printer-supply-description", "marker-names", "marker-levels",
     "marker-types", "printer-input-tray", "media-col-ready", "media-ready"]
)  # fmt: skip


@given(st.dictionaries(_names, _values))
def test_any_answer_is_read_without_error(attrs: dict[str, Any]) -> None:
    """Whatever types a printer sends, the readers answer with bounded, in-range rows."""
    for row in levels.supply_levels(attrs):
        assert row.level_percent is None or 0 <= row.level_percent <= 100
        assert 0 < len(row.name) <= levels.MAX_NAME
    for tray in levels.media_levels(attrs):
        assert tray.level_percent is None or 0 <= tray.level_percent <= 100
    media = levels.loaded_media(attrs)
    assert media is None or list(media) == sorted(media)
    assert isinstance(levels.media_empty((), attrs), bool)


def test_media_empty() -> None:
    """media-empty (any severity), or every tray that reports a level at 0, is out of
    media."""
    assert levels.media_empty(("media-empty-report",), {})
    assert not levels.media_empty(("media-low-report",), IPPEVE)
    empty = {"printer-input-tray": ["name=main;level=0;maxcapacity=250", "name=x;level=-2"]}
    assert levels.media_empty((), empty)
    assert not levels.media_empty((), {})
