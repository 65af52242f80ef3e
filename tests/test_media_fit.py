"""Preflight's questions to the stock rule (edgeprint.media_fit over edgeprint.stock), pure:
sizes from PWG names, from what the API shows, from PDF points; the badge desk's cases; and
preflight answering as the routing decides, for any stock."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from edgeprint.media_fit import Size, from_media_name, from_points, from_shown, judge, view_of
from edgeprint.stock import DEFAULT_TOLERANCE_HMM, StockView, stock

sides = st.integers(min_value=1000, max_value=120_000)


def test_sizes_from_names_the_api_and_pdf_points() -> None:
    """Each way a size reaches preflight gives the same hundredths of a millimetre."""
    assert from_media_name("oe_4x3-label_4x3in") == Size(10160, 7620, "oe_4x3-label_4x3in")
    assert from_media_name("iso_a4_210x297mm") == Size(21000, 29700, "iso_a4_210x297mm")
    assert from_media_name("4x3 labels") is None
    assert from_media_name("oe_nothing_0x3in") is None
    assert from_shown("oe_4x3-label_4x3in (101.6x76.2mm)") == Size(
        10160, 7620, "oe_4x3-label_4x3in"
    )
    assert from_shown("101.6x76.2mm") == Size(10160, 7620)
    assert from_shown("garbage \x00 name") is None
    assert from_points(288, 216) == Size(10160, 7620)
    assert Size(10160, 7620).inches() == "4×3 in"


def test_the_rule_on_badge_desk_cases() -> None:
    """4x3 fits 4x3 and 3x4 labels, not 4x6 labels; on letter it is a sheet fit; a letter
    page on 4x3 labels is wrong stock; nothing ready is no fit."""
    badge = from_points(288, 216)
    assert judge(badge, ["oe_4x3-label_4x3in (101.6x76.2mm)"]) == "exact"
    assert judge(badge, ["oe_3x4-label_3x4in (76.2x101.6mm)"]) == "exact"
    assert judge(badge, ["oe_4x6-label_4x6in (101.6x152.4mm)"]) == "none"
    assert judge(badge, ["na_letter_8.5x11in (215.9x279.4mm)"]) == "sheet"
    assert judge(from_points(612, 792), ["oe_4x3-label_4x3in (101.6x76.2mm)"]) == "none"
    assert judge(badge, []) == "none"


def test_the_routings_own_view_decides_label_stock_by_its_media_type() -> None:
    """An index card size typed labels (GET /v1/printers media_ready: label true, fit exact)
    is label stock, wrong for a 4×3 in badge; named only, it would read as sheet stock."""
    badge = from_points(288, 216)
    routed = [{"name": "na_index-4x6_4x6in", "width_mm": 101.6, "length_mm": 152.4,
               "label": True, "fit": "exact"}]  # fmt: skip
    assert judge(badge, routed) == "none"
    assert judge(badge, ["na_index-4x6_4x6in (101.6x152.4mm)"]) == "sheet"
    centred = [{**routed[0], "fit": "center"}]
    assert judge(badge, centred) == "sheet"


@given(
    sides, sides, sides, sides, st.booleans(), st.sampled_from([None, "exact", "center", "scale"])
)
def test_preflight_answers_as_the_routing_decides(
    w: int, h: int, sw: int, sh: int, label: bool, fit: str | None
) -> None:
    """Whatever the stock: exact where the claim would see an exact fit, none where no claim
    would take the badge, sheet otherwise."""
    s = stock(sw, sh, media_type="labels" if label else "stationery")
    view = StockView((s,), fit)  # type: ignore[arg-type]
    routed = [{"width_mm": s.short / 100, "length_mm": s.long / 100, "label": s.label,
               "fit": view.fit_of(s)}]  # fmt: skip
    page = Size(w, h)
    match = view.match(page.pages(), DEFAULT_TOLERANCE_HMM)
    want = {"exact": "exact", "other": "sheet", None: "none"}[match]
    assert judge(page, routed) == want
    assert view_of(routed).match(page.pages(), DEFAULT_TOLERANCE_HMM) == match
