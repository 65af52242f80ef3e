"""Preflight's stock rule (edgeprint.media_fit), pure: sizes from PWG names, from what the
API shows, from PDF points; fit within 1.5 mm either way round; sheet stock takes smaller."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from edgeprint import media_fit
from edgeprint.media_fit import Size, fits, from_media_name, from_points, from_shown, judge

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
    assert Size(10160, 7620).inches() == "4x3 in"


def test_the_rule_on_badge_desk_cases() -> None:
    """4x3 fits 4x3 and 3x4 labels, not 4x6 labels; on letter it is a sheet fit; a letter
    page on 4x3 labels is wrong stock."""
    badge = from_points(288, 216)
    assert judge(badge, ["oe_4x3-label_4x3in (101.6x76.2mm)"]) == "exact"
    assert judge(badge, ["oe_3x4-label_3x4in (76.2x101.6mm)"]) == "exact"
    assert judge(badge, ["oe_4x6-label_4x6in (101.6x152.4mm)"]) == "none"
    assert judge(badge, ["na_letter_8.5x11in (215.9x279.4mm)"]) == "sheet"
    assert judge(from_points(612, 792), ["oe_4x3-label_4x3in (101.6x76.2mm)"]) == "none"
    assert judge(badge, []) == "none"


@given(sides, sides, st.integers(min_value=-150, max_value=150))
def test_fit_is_symmetric_and_tolerant(w: int, h: int, delta: int) -> None:
    """Within the tolerance a page fits its stock either way round; beyond it, it does not."""
    page = Size(w, h)
    assert fits(page, Size(w + delta, h))
    assert fits(page, Size(h, w + delta))
    assert not fits(page, Size(max(w, h) + media_fit.TOLERANCE_HMM + 1, h))
