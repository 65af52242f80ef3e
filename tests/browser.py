"""What a person does in a page, in real headless chromium (tests/cdp.py): the screen's size,
a tap with real mouse events, typed text, the status page opened with a token; and what the
page tests check of every page: axe-core finds nothing, nothing scrolls sideways.

Loaded as a pytest plugin (tests/conftest.py), so ``chromium_path`` is a fixture everywhere.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from tests.cdp import Page
from tests.rig_fixtures import in_ci
from tests.test_status_page import require_chromium

#: axe-core from npm, pinned in tests/axe/package.json and package-lock.json; installed by
#: ``npm ci --prefix tests/axe`` (``make install``, so ``.ci/run``).
AXE_JS = Path(__file__).parent / "axe" / "node_modules" / "axe-core" / "axe.min.js"

PHONE_WIDTH = 390
PHONE_HEIGHT = 844
#: The screens every page is tried at (issue 24): a phone and a tablet (or kiosk) on its side.
SCREENS = {"phone": (PHONE_WIDTH, PHONE_HEIGHT, True), "tablet": (1024, 768, False)}
#: A desk's laptop (issue 25): the status page's wide layout.
DESKTOP = (1280, 900, False)


@pytest.fixture
def chromium_path() -> str:
    """Checked before the printers start: a missing browser skips (or fails in CI) at once."""
    return require_chromium()


def js(value: str) -> str:
    """``value`` as a JavaScript string literal."""
    return json.dumps(value)


async def at_size(
    page: Page, width: int = PHONE_WIDTH, height: int = PHONE_HEIGHT, mobile: bool = True
) -> None:
    """The page's screen: a phone's unless told."""
    await page.call(
        "Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
        mobile=mobile,
    )  # fmt: skip


async def open_status_page(page: Page, base_url: str, token: str) -> None:
    """The status page with ``token`` in its fragment, once its first poll has answered."""
    await page.goto(f"{base_url}/#token={token}")
    await page.wait("document.body && document.body.getAttribute('data-loaded') === '1'")


async def mouse_click(page: Page, x: float, y: float) -> None:
    """A left-button press and release at (x, y), as a finger or a mouse gives them."""
    for kind in ("mousePressed", "mouseReleased"):
        await page.call(
            "Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1
        )


async def real_click(page: Page, selector: str) -> None:
    """Scroll ``selector`` into view and click its centre with the mouse, once it is the
    element a person's finger would hit there (nothing over it, the page not busy)."""
    point: list[float] = await page.wait(
        "(function () { var e = document.querySelector(" + js(selector) + ");"
        " if (!e || document.body.hasAttribute('data-busy')) { return null; }"
        " e.scrollIntoView({block: 'center'}); var r = e.getBoundingClientRect();"
        " if (!r.width || !r.height) { return null; }"
        " var x = r.left + r.width / 2, y = r.top + r.height / 2;"
        " var at = document.elementFromPoint(x, y);"
        " return at && (at === e || e.contains(at)) ? [x, y] : null; })()"
    )
    x, y = point
    await mouse_click(page, x, y)


async def type_text(page: Page, selector: str, text: str) -> None:
    """Click into the field and type ``text`` as keyboard input."""
    await real_click(page, selector)
    await page.wait(f"document.activeElement === document.querySelector({js(selector)})")
    await page.call("Input.insertText", text=text)


async def enter(page: Page) -> None:
    """The Enter key pressed and released."""
    for kind in ("keyDown", "keyUp"):
        await page.call(
            "Input.dispatchKeyEvent", type=kind, key="Enter", code="Enter",
            windowsVirtualKeyCode=13, text="\r" if kind == "keyDown" else "",
        )  # fmt: skip


async def no_sideways_scroll(page: Page) -> None:
    """The page is no wider than its screen (the first elements past the edge are named)."""
    widths = await page.eval(
        "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    wide = await page.eval(
        "Array.from(document.querySelectorAll('body *')).filter(function (e) {"
        " return e.getBoundingClientRect().right > document.documentElement.clientWidth + 1; })"
        ".slice(0, 5).map(function (e) { return e.tagName + '#' + e.id + '.' + e.className +"
        " ' ' + Math.round(e.getBoundingClientRect().right); })"
    )
    assert widths[0] <= widths[1], f"the page scrolls sideways at {widths[1]} px: {wide}"


@functools.cache
def axe_source() -> str:
    """axe.min.js; when it is not installed, a skip (locally) or a failure (in CI)."""
    if not AXE_JS.is_file():
        why = f"axe-core not installed ({AXE_JS} missing): run npm ci --prefix tests/axe"
        if in_ci():
            pytest.fail(f"{why}; CI is set, so this is a failure, not a skip", pytrace=False)
        pytest.skip(why)
    return AXE_JS.read_text(encoding="utf-8")


async def axe_violations(page: Page) -> list[str]:
    """axe-core's rules run in the page: the ids of the rules it finds broken, with nodes."""
    await page.eval(axe_source() + ";true")
    pinned = json.loads((AXE_JS.parents[2] / "package.json").read_text())["dependencies"]
    assert await page.eval("axe.version") == pinned["axe-core"]  # the npm pin, not another
    found = await page.eval(
        "axe.run(document).then(function (r) { return JSON.stringify(r.violations.map("
        "function (v) { return v.id + ': ' + v.nodes.map(function (n) {"
        " return n.target.join(' '); }).join(', '); })); })"
    )
    violations: list[str] = json.loads(found)
    return violations


async def fits_screen(page: Page) -> None:
    """Nothing is wider than the screen (issue 25): no element's box ends past the window's
    right edge, not even inside a box that scrolls on its own, and the page does not scroll
    sideways; no button's word is broken over two lines (a table squeezed into a phone).
    The first offenders are named."""
    width, scroll, wide = await page.eval(
        "(function () { var w = window.innerWidth, out = [];"
        " document.querySelectorAll('body *').forEach(function (e) {"
        " var r = e.getBoundingClientRect();"
        " if ((r.width || r.height) && r.right > w + 1) {"
        " out.push(e.tagName + '#' + e.id + '.' + e.className + ' ' + Math.round(r.right) +"
        " ' ' + (e.textContent || '').slice(0, 40)); } });"
        " document.querySelectorAll('button, summary').forEach(function (e) {"
        " var words = (e.textContent || '').trim().split(/\\s+/).length;"
        " var g = document.createRange(); g.selectNodeContents(e); var tops = {};"
        " Array.from(g.getClientRects()).forEach(function (x) {"
        " if (x.width) { tops[Math.round(x.top)] = 1; } });"
        " if (Object.keys(tops).length > words) {"
        " out.push('squeezed ' + e.tagName + ' ' + (e.textContent || '').slice(0, 40)); } });"
        " return [w, document.documentElement.scrollWidth, out.slice(0, 8)]; })()"
    )
    assert wide == [], f"wider than the {width} px screen, or squeezed: {wide}"
    assert scroll <= width, f"the page scrolls sideways: {scroll} > {width} px"
    assert await broken_words(page) == [], "a word in a table is broken over two lines"


async def broken_words(page: Page, selector: str = "table th, table td") -> list[str]:
    """The words (runs of letters between spaces and hyphens) in the elements matching
    ``selector`` that the browser broke over two lines ("lobb/y", "Waitin/g": a table squeezed
    into a phone); a break after a hyphen is a line break, not a broken word. Cells inside a
    visually hidden box (a phone's card table's header, 1 px wide) are not on screen."""
    broken: list[str] = await page.eval(
        "(function () { var out = [];"
        " document.querySelectorAll(" + js(selector) + ").forEach(function (cell) {"
        " for (var up = cell; up; up = up.parentElement) {"  # a visually hidden header: skip
        " if (up.getBoundingClientRect().width <= 1) { return; } }"
        " var walk = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT), node;"
        " while ((node = walk.nextNode())) {"
        " var re = /[^\\s\\-]+/g, m;"
        " while ((m = re.exec(node.data))) {"
        " var g = document.createRange(); g.setStart(node, m.index);"
        " g.setEnd(node, m.index + m[0].length); var tops = {};"
        " Array.from(g.getClientRects()).forEach(function (x) {"
        " if (x.width) { tops[Math.round(x.top)] = 1; } });"
        " if (Object.keys(tops).length > 1) { var t = cell.closest('table');"
        " out.push(m[0] + ' (' + (t.id || t.className) + ' ' + window.innerWidth + 'px)'); }"
        " } } });"
        " return out.slice(0, 8); })()"
    )
    return broken


async def one_line(page: Page, selector: str) -> list[int]:
    """How many lines the text of each element matching ``selector`` takes (1: no wrap)."""
    lines: list[int] = await page.eval(
        "Array.from(document.querySelectorAll(" + js(selector) + ")).map(function (e) {"
        " var r = document.createRange(); r.selectNodeContents(e);"
        " var tops = {}; Array.from(r.getClientRects()).forEach(function (x) {"
        " if (x.width) { tops[Math.round(x.top)] = 1; } });"
        " return Object.keys(tops).length; })"
    )
    return lines


async def key(page: Page, name: str, code: int) -> None:
    """A key without text (``ArrowDown``, 40) pressed and released on the focused element."""
    for kind in ("rawKeyDown", "keyUp"):
        await page.call(
            "Input.dispatchKeyEvent", type=kind, key=name, code=name, windowsVirtualKeyCode=code
        )
