"""The status page and the release page over https (issue 26), in real headless chromium on
real printers, against an appliance with ``[server] tls = "self-signed"``: chromium accepts
exactly the appliance's pinned key (``--ignore-certificate-errors-spki-list``, the base64
of the ``sha256//`` pin), as a kiosk's browser set up from ``edgeprint tls fingerprint``
does. At a phone's size the status page loads and polls over https, and a release code
typed on the release page and a real click on "Print all" print the jobs once there (the
printers' logs); axe-core finds nothing. Without the pin, or with another key's, chromium
refuses the page (net::ERR_CERT_AUTHORITY_INVALID).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from edgeprint import certificates
from testbed.config import config_dict
from testbed.rig import Rig
from tests.browser import at_size, axe_violations, fits_screen, open_status_page
from tests.cdp import browser
from tests.conftest import TECH_TOKEN
from tests.test_release_page import (
    CODE,
    _click,
    _config,
    _held,
    _printed_on,
    _set_credentials,
    _type,
)
from tests.tls_rig import spki_pin, tls_appliance


def _pinned(cert: certificates.Certificate) -> str:
    return f"--ignore-certificate-errors-spki-list={spki_pin(cert)}"


async def test_status_page_and_release_over_https_with_the_pinned_key(
    chromium_path: str, tmp_path: Path, printers: Rig
) -> None:
    """Phone size, chromium pinned to the appliance's key: the status page loads over https
    and shows the HELD jobs; on the release page a typed code lists them and a real click on
    "Print all" prints each once on printer-02; axe-core clean on both pages."""
    cfg = _config(tmp_path, printers)
    async with tls_appliance(cfg, tmp_path) as (_, kiosk, cert):
        assert kiosk.url.startswith("https://")
        await _set_credentials(kiosk, "ann", {"release_code": CODE})
        mine = [await _held(kiosk, "ann", f"https-page-{i:04d}", pool="lobby") for i in range(2)]
        async with browser(tmp_path, _pinned(cert)) as page:
            await at_size(page)
            await open_status_page(page, kiosk.url, TECH_TOKEN)
            assert await page.eval("location.protocol") == "https:"
            rows = await page.wait(
                "(function () { var r = Array.from(document.querySelectorAll("
                "'#jobs tr[data-job]')).map(function (tr) {"
                " return tr.getAttribute('data-job') + ':' + tr.getAttribute('data-state'); });"
                " return r.length === 2 && r; })()"
            )
            assert sorted(rows) == sorted(f"{i}:HELD" for i in mine)
            await fits_screen(page)
            assert await axe_violations(page) == []

            await page.goto(f"{kiosk.url}/release/printer-02")
            await page.wait("document.body && document.body.getAttribute('data-state') === 'ready'")
            assert await page.eval("location.href") == f"{kiosk.url}/release/printer-02"
            await _type(page, CODE, 0.15)
            await page.wait("document.body.getAttribute('data-state') === 'listed'")
            listed = await page.eval(
                "Array.from(document.querySelectorAll('#jobs li')).map(function (li) {"
                " return li.dataset.job; })"
            )
            assert sorted(listed) == sorted(mine)
            await fits_screen(page)
            assert await axe_violations(page) == []
            await _click(page, "#print-all")
            await page.wait("document.body.getAttribute('data-state') === 'printed'")
            assert await page.eval("document.getElementById('answer').textContent") == (
                "2 jobs sent to printer-02"
            )
        await kiosk.wait_states(mine, {"DONE"})
        assert _printed_on(printers, mine) == {i: ["printer-02"] for i in mine}


@pytest.mark.parametrize("pin", ["none", "another key"])
async def test_chromium_refuses_the_page_without_the_pinned_key(
    chromium_path: str, tmp_path: Path, pin: str
) -> None:
    """No pin, or the pin of another key (a box that is not this one): chromium refuses the
    certificate (net::ERR_CERT_AUTHORITY_INVALID) and shows nothing of the appliance."""
    flags: tuple[str, ...] = ()
    if pin == "another key":
        other = certificates.make_self_signed(
            tmp_path / "other.crt", tmp_path / "other.key", ["127.0.0.1"]
        )
        flags = (_pinned(other),)
    cfg = config_dict(tmp_path / "data")
    async with tls_appliance(cfg, tmp_path) as (_, kiosk, _cert), browser(tmp_path, *flags) as page:
        assert await page.navigate(f"{kiosk.url}/release/printer-01") == (
            "net::ERR_CERT_AUTHORITY_INVALID"
        )
        assert await page.eval("document.getElementById('code')") is None
