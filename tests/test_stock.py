"""Stock (edgeprint/stock.py, store/stock_sql.py): a job's page sizes against a printer's ready
media, the claim's SQL condition against the pure rule, and the page sizes read from PDFs."""

from __future__ import annotations

import io
import sqlite3

import hypothesis
import hypothesis.strategies as st
import pypdf
import pytest
from pypdf.generic import ArrayObject, FloatObject, NameObject, NumberObject

from edgeprint.documents import inspect_pdf
from edgeprint.stock import (
    PageSizes,
    Stock,
    StockView,
    configured,
    is_label_stock,
    size_words,
    stock,
    waiting_reason,
)
from edgeprint.store.stock_sql import stock_condition

IN = 2540  # hundredths of a millimetre per inch
TOL = 200
BADGE = PageSizes.of([(4 * IN, 3 * IN)])
LABEL_4X3 = stock(4 * IN, 3 * IN, name="oe_4x3-label_4x3in", media_type="labels")
LABEL_4X6 = stock(4 * IN, 6 * IN, name="na_index-4x6_4x6in", media_type="labels")
LETTER = stock(21590, 27940, name="na_letter_8.5x11in", media_type="stationery")


def test_a_badge_fits_its_own_label_stock_turned_either_way() -> None:
    assert BADGE is not None
    assert StockView((LABEL_4X3,)).match(BADGE, TOL) == "exact"
    turned = PageSizes.of([(3 * IN, 4 * IN)])
    assert StockView((LABEL_4X3,)).match(turned, TOL) == "exact"


def test_label_stock_of_another_size_does_not_fit_unless_the_printer_may_center_or_scale() -> None:
    assert StockView((LABEL_4X6,)).match(BADGE, TOL) is None
    assert StockView((LABEL_4X6,), fit="center").match(BADGE, TOL) == "other"
    assert StockView((LABEL_4X6,), fit="scale").match(BADGE, TOL) == "other"
    big = PageSizes.of([(5 * IN, 7 * IN)])
    assert StockView((LABEL_4X6,), fit="center").match(big, TOL) is None


def test_sheet_stock_scales_any_size_as_office_printers_do() -> None:
    a4 = PageSizes.of([(21000, 29700)])
    assert StockView((LETTER,)).match(a4, TOL) == "other"
    assert StockView((LETTER,)).match(BADGE, TOL) == "other"
    assert StockView((LETTER,), fit="exact").match(BADGE, TOL) is None


def test_unknown_pages_and_unknown_stock_fit_anything() -> None:
    assert StockView((LABEL_4X3,)).match(None, TOL) == "other"
    assert StockView(()).match(BADGE, TOL) == "other"


def test_a_document_of_several_sizes_fits_exactly_only_when_every_page_does() -> None:
    mixed = PageSizes.of([(4 * IN, 3 * IN), (4 * IN, 6 * IN)])
    assert mixed is not None
    assert not mixed.uniform
    assert StockView((LABEL_4X3,)).match(mixed, TOL) is None
    assert StockView((LABEL_4X6,), fit="center").match(mixed, TOL) == "other"


def test_label_stock_is_told_by_media_type_or_name() -> None:
    assert is_label_stock(None, "labels")
    assert is_label_stock(None, "labels-continuous")
    assert is_label_stock("oe_4x3-label_4x3in", None)
    assert is_label_stock("roll_max_4x100in", None)
    assert not is_label_stock("na_letter_8.5x11in", "stationery")
    assert not is_label_stock("na_index-4x6_4x6in", None)  # an index card unless typed labels
    assert not is_label_stock(None, None)


def test_sizes_read_as_people_name_them() -> None:
    assert size_words(3 * IN, 4 * IN) == "3×4 in"
    assert size_words(21590, 27940) == "8.5×11 in"
    assert size_words(21000, 29700) == "210×297 mm"
    assert LABEL_4X3.describe() == "4×3 in"  # its name's order
    assert BADGE is not None
    assert BADGE.describe() == "4×3 in"  # as its first page is laid out: wider than tall
    turned = PageSizes.of([(3 * IN, 4 * IN)])
    assert turned is not None
    assert turned.describe() == "3×4 in"
    assert turned == BADGE  # the same size to the routing: only the words differ


def test_configured_media_reads_pwg_names() -> None:
    (s,) = configured(["oe_4x3-label_4x3in"])
    assert (s.short, s.long, s.label) == (3 * IN, 4 * IN, True)
    assert configured(["not-a-size"]) == ()


def test_the_waiting_reason_names_the_size_and_what_each_printer_has() -> None:
    views: dict[str, StockView | None] = {
        "printer-01": StockView((LABEL_4X6,)),
        "printer-02": StockView((stock(3 * IN, 5 * IN, name="na_index-3x5_3x5in",
                                       media_type="labels"),)),
    }  # fmt: skip
    assert waiting_reason(BADGE, "lobby", views, TOL) == (
        "no printer in lobby has 4×3 in stock ready; printer-01 has 4×6 in; printer-02 has 3×5 in"
    )
    one = {"printer-01": views["printer-01"]}
    assert waiting_reason(BADGE, "printer-01", one, TOL) == (
        "printer-01 has no 4×3 in stock ready; it has 4×6 in"
    )


def test_no_waiting_reason_while_a_printer_is_not_probed_or_one_fits() -> None:
    assert waiting_reason(BADGE, "lobby", {"a": StockView((LABEL_4X6,)), "b": None}, TOL) is None
    fits = {"a": StockView((LABEL_4X6,)), "b": StockView((LABEL_4X3,))}
    assert waiting_reason(BADGE, "lobby", fits, TOL) is None
    assert waiting_reason(None, "lobby", {"a": StockView((LABEL_4X6,))}, TOL) is None


# --- the claim's SQL condition is the pure rule -----------------------------------------

_edge = st.integers(min_value=1000, max_value=40000)
_pages = st.one_of(
    st.none(),
    st.lists(st.tuples(_edge, _edge), min_size=1, max_size=3).map(PageSizes.of),
    # near a stock's edges: the tolerance's boundaries
    st.tuples(st.sampled_from([7620, 10160, 15240]), st.integers(-250, 250)).map(
        lambda t: PageSizes.of([(t[0] + t[1], 10160)])
    ),
)
_stock = st.builds(
    Stock,
    short=st.sampled_from([7620, 10160, 21590]),
    long=st.sampled_from([10160, 15240, 27940]),
    label=st.booleans(),
)
_view = st.builds(
    StockView,
    stocks=st.lists(_stock, max_size=3).map(tuple),
    fit=st.sampled_from([None, "exact", "center", "scale"]),
)


def _claimable(
    page: PageSizes | None, mine: StockView, peers: list[StockView]
) -> tuple[bool, bool]:
    """The rule in words: (a job named for this printer, a pool job) may be claimed."""
    if page is None:
        return True, True
    m = mine.match(page, TOL)
    peer_exact = any(p.known and p.match(page, TOL) == "exact" for p in peers)
    return m is not None, m == "exact" or (m == "other" and not peer_exact)


@hypothesis.settings(max_examples=400, deadline=None)
@hypothesis.given(pages=st.lists(_pages, min_size=1, max_size=8), mine=_view,
                  peers=st.lists(_view, max_size=3))  # fmt: skip
def test_the_claims_sql_condition_is_the_pure_rule(
    pages: list[PageSizes | None], mine: StockView, peers: list[StockView]
) -> None:
    db = sqlite3.connect(":memory:")
    db.execute(
        "CREATE TABLE jobs (id INTEGER, page_short_min INTEGER, page_short_max INTEGER, "
        "page_long_min INTEGER, page_long_max INTEGER)"
    )
    for i, p in enumerate(pages):
        edges = (p.short_min, p.short_max, p.long_min, p.long_max) if p else (None,) * 4
        db.execute("INSERT INTO jobs VALUES (?, ?, ?, ?, ?)", (i, *edges))
    cond = stock_condition(mine, [p for p in peers if p.known], TOL)
    own = {r[0] for r in db.execute(f"SELECT id FROM jobs WHERE {cond.own}")}
    pool = {r[0] for r in db.execute(f"SELECT id FROM jobs WHERE {cond.pool}")}
    want = [_claimable(p, mine, peers) for p in pages]
    assert own == {i for i, (o, _) in enumerate(want) if o}
    assert pool == {i for i, (_, q) in enumerate(want) if q}


# --- page sizes from the PDF --------------------------------------------------------------


def _pdf(sizes: list[tuple[float, float]], *, inherit: bool = False, crop: bool = False) -> bytes:
    w = pypdf.PdfWriter()
    for width, height in sizes:
        page = w.add_blank_page(width=width, height=height)
        if crop:
            page[NameObject("/CropBox")] = ArrayObject(
                [FloatObject(10), FloatObject(10), FloatObject(10 + width / 2),
                 FloatObject(10 + height / 2)]
            )  # fmt: skip
    if inherit:  # the box only on the page tree's root (ISO 32000 §7.7.3.4)
        root = w._root_object["/Pages"].get_object()
        root[NameObject("/MediaBox")] = ArrayObject([NumberObject(0), NumberObject(0),
                                                     NumberObject(288), NumberObject(216)])  # fmt: skip
        for page in w.pages:
            del page[NameObject("/MediaBox")]
    out = io.BytesIO()
    w.write(out)
    return out.getvalue()


def test_a_badge_pdf_measures_4_by_3_inches() -> None:
    facts = inspect_pdf(io.BytesIO(_pdf([(288, 216)])), 10)
    assert facts.pages == 1
    assert facts.sizes == PageSizes(3 * IN, 3 * IN, 4 * IN, 4 * IN)
    assert facts.sizes is not None
    assert facts.sizes.describe() == "4×3 in"


def test_every_page_is_measured_and_boxes_are_inherited_or_cropped() -> None:
    mixed = inspect_pdf(io.BytesIO(_pdf([(288, 216), (612, 792)])), 10).sizes
    assert mixed == PageSizes(3 * IN, 21590, 4 * IN, 27940)
    assert inspect_pdf(io.BytesIO(_pdf([(100, 100)] * 2, inherit=True)), 10).sizes == PageSizes(
        3 * IN, 3 * IN, 4 * IN, 4 * IN
    )
    assert inspect_pdf(io.BytesIO(_pdf([(576, 432)], crop=True)), 10).sizes == PageSizes(
        3 * IN, 3 * IN, 4 * IN, 4 * IN
    )


@pytest.mark.parametrize("box", [["a", "b", "c", "d"], [0, 0, 0, 0], [0, 0, 1e9, 10]])
def test_a_page_whose_box_is_no_size_leaves_the_size_unknown(box: list[object]) -> None:
    w = pypdf.PdfWriter()
    page = w.add_blank_page(width=288, height=216)
    page[NameObject("/MediaBox")] = ArrayObject(
        [NameObject(f"/{v}") if isinstance(v, str) else FloatObject(v) for v in box]
    )
    out = io.BytesIO()
    w.write(out)
    facts = inspect_pdf(io.BytesIO(out.getvalue()), 10)
    assert (facts.pages, facts.sizes) == (1, None)


# --- a printer's garbage media answers ----------------------------------------------------


@pytest.mark.parametrize(
    "attrs",
    [
        {"media-ready": ["not a size", "", "na_letter_0x11in", "x_y_-4x6in"]},
        {
            "media-col-ready": [
                {"media-size": {"x-dimension": -5, "y-dimension": 7620}},
                {"media-size": {"x-dimension": [100, 200], "y-dimension": 7620}},
                {"media-size": "garbage"},
                "garbage",
                42,
            ]
        },
        {"media-ready": 12, "media-col-ready": None},
    ],
)
def test_garbage_media_answers_are_no_stock_so_the_printer_takes_any_size(
    attrs: dict[str, object],
) -> None:
    """Ready media that name no size are ignored, not guessed: with none left the printer's
    stock is unknown and every job fits it (as before stock was read), and the configured
    media stand in when there are some."""
    from edgeprint.config import PrinterConfig
    from edgeprint.dispatch.ready import ready_stock

    cfg = PrinterConfig(name="printer-01", uri="ipp://127.0.0.1:631/ipp/print")
    view, source = ready_stock(attrs, cfg)
    assert (view.stocks, source) == ((), None)
    assert view.match(BADGE, TOL) == "other"
    told = PrinterConfig(name="printer-01", uri="ipp://127.0.0.1:631/ipp/print",
                         media="oe_4x3-label_4x3in")  # type: ignore[arg-type]  # fmt: skip
    view, source = ready_stock(attrs, told)
    assert source == "config"
    assert view.match(BADGE, TOL) == "exact"
