"""``GET /``: the technicians' live status page (DESIGN §5, §8).

One self-contained HTML page (inline CSS and JavaScript, no external assets),
readable on a phone. It holds no data, so it is served without a token; the
page asks for a tech token once, keeps it in ``sessionStorage`` and polls
``/v1/printers`` and ``/v1/dead-letter`` every 2 s with
``Authorization: Bearer``. A link may carry the token in its fragment
(``/#token=…``, never sent to the server); the page moves it to
``sessionStorage`` and strips it from the address bar.

Everything from the API reaches the page as text nodes (``textContent`` /
``append(string)``), never as markup. A Content-Security-Policy allows only
this page's own script and style (by hash) and requests to the appliance itself.

Register with :func:`add_routes` (from ``build_app``).
"""

from __future__ import annotations

import base64
import hashlib

from aiohttp import web

__all__ = ["PAGE", "add_routes", "status_page"]

POLL_INTERVAL_MS = 2000
REQUEST_TIMEOUT_MS = 5000
DEAD_LETTER_SHOWN = 100

_STYLE = """
:root { color-scheme: light dark; --ok: #1a7f37; --bad: #c62828; --warn: #a15c00;
  --mute: #6b7280; --line: #d0d7de; --card: #ffffff; --bg: #f4f6f8; --fg: #111827; }
@media (prefers-color-scheme: dark) {
  :root { --card: #1c2128; --bg: #0d1117; --fg: #e6edf3; --line: #30363d; --mute: #9ca3af; }
}
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  background: var(--bg); color: var(--fg); }
header { display: flex; flex-wrap: wrap; align-items: center; gap: .5rem 1rem;
  padding: .75rem 1rem; background: var(--card); border-bottom: 1px solid var(--line);
  position: sticky; top: 0; }
h1 { font-size: 1.2rem; margin: 0; }
h2 { font-size: 1.05rem; margin: 1.25rem 0 .5rem; }
main { padding: 0 1rem 2rem; max-width: 72rem; margin: 0 auto; }
#conn { font-size: .9rem; color: var(--mute); flex: 1; }
#conn.bad { color: var(--bad); font-weight: 600; }
button { font: inherit; padding: .35rem .8rem; border-radius: .4rem;
  border: 1px solid var(--line); background: var(--card); color: var(--fg); }
#login { background: var(--card); border: 1px solid var(--line); border-radius: .5rem;
  padding: 1rem; margin-top: 1rem; }
#login input { font: inherit; width: 100%; max-width: 24rem; padding: .4rem;
  margin: .5rem 0; border: 1px solid var(--line); border-radius: .4rem; }
.alert { border-left: 4px solid var(--bad); background: var(--card); padding: .6rem .8rem;
  margin-top: 1rem; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(17rem, 1fr));
  gap: .75rem; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: .5rem;
  padding: .75rem; border-top: 4px solid var(--ok); }
.card.unhealthy, .card.down { border-top-color: var(--bad); }
.card.unknown { border-top-color: var(--mute); }
.card.paused { border-top-color: var(--warn); }
.card h3 { margin: 0 0 .4rem; font-size: 1.05rem; display: flex; flex-wrap: wrap;
  gap: .4rem; align-items: center; }
.badge { font-size: .8rem; font-weight: 600; padding: .05rem .45rem; border-radius: 1rem;
  color: #fff; background: var(--ok); }
.badge.unhealthy, .badge.down, .badge.dead { background: var(--bad); }
.badge.unknown { background: var(--mute); }
.badge.paused { background: var(--warn); }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .1rem .75rem; margin: 0;
  font-size: .92rem; }
dt { color: var(--mute); }
dd { margin: 0; overflow-wrap: anywhere; }
.mono { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace;
  font-size: .85rem; overflow-wrap: anywhere; }
table { border-collapse: collapse; width: 100%; background: var(--card); font-size: .92rem; }
th, td { text-align: left; padding: .35rem .5rem; border-bottom: 1px solid var(--line); }
td.n, th.n { text-align: right; }
.empty { color: var(--mute); }
.stale #data { opacity: .55; }
ul.dead { list-style: none; padding: 0; margin: 0; display: grid; gap: .5rem; }
ul.dead li { background: var(--card); border: 1px solid var(--line);
  border-left: 4px solid var(--bad); border-radius: .4rem; padding: .5rem .75rem; }
"""

_SCRIPT = """
"use strict";
(function () {
  var KEY = "edgeprint.techToken";
  var POLL_MS = @POLL_MS@, TIMEOUT_MS = @TIMEOUT_MS@, DEAD_SHOWN = @DEAD_SHOWN@;
  var memoryToken = null;
  var timer = null;

  function readToken() {
    try { return window.sessionStorage.getItem(KEY); } catch (e) { return memoryToken; }
  }
  function saveToken(t) {
    memoryToken = t;
    try { window.sessionStorage.setItem(KEY, t); } catch (e) { /* private mode: memory */ }
  }
  function forgetToken() {
    memoryToken = null;
    try { window.sessionStorage.removeItem(KEY); } catch (e) { /* nothing stored */ }
  }

  // A link may carry the token in its fragment (#token=...): keep it, strip the address.
  (function takeFragmentToken() {
    var m = /(?:^|&)token=([^&]*)/.exec(window.location.hash.slice(1));
    if (!m) { return; }
    var t = "";
    try { t = decodeURIComponent(m[1]).trim(); } catch (e) { t = ""; }
    if (t) { saveToken(t); }
    window.history.replaceState(null, "", window.location.pathname + window.location.search);
  })();

  // Build elements; strings always become text nodes (never markup).
  function h(tag, cls) {
    var el = document.createElement(tag);
    if (cls) { el.className = cls; }
    for (var i = 2; i < arguments.length; i++) {
      var kid = arguments[i];
      if (kid === null || kid === undefined || kid === false) { continue; }
      el.append(kid instanceof Node ? kid : String(kid));
    }
    return el;
  }
  function byId(id) { return document.getElementById(id); }
  function age(s) {
    if (s === null || s === undefined) { return "-"; }
    s = Math.max(0, Math.floor(s));
    if (s < 60) { return s + " s"; }
    if (s < 3600) { return Math.floor(s / 60) + " min " + (s % 60) + " s"; }
    return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min";
  }
  function when(iso) {
    if (!iso) { return "-"; }
    var d = new Date(iso);
    return isNaN(d.getTime()) ? String(iso) : d.toLocaleString();
  }
  function health(p) {
    if (p.printer_state === null && !p.reachable) { return p.last_error ? "down" : "unknown"; }
    if (!p.reachable) { return "down"; }
    return p.healthy ? "healthy" : "unhealthy";
  }
  var HEALTH_TEXT = { healthy: "healthy", unhealthy: "unhealthy", down: "unreachable",
                      unknown: "not probed yet" };

  function row(dl, label, value, cls) {
    dl.append(h("dt", null, label), h("dd", cls || null, value));
  }

  function printerCard(p) {
    var hl = health(p);
    var card = h("article", "card " + (p.paused ? "paused" : hl));
    card.setAttribute("data-printer", p.name);
    var title = h("h3", null, h("span", null, p.name),
                  h("span", "badge " + hl, HEALTH_TEXT[hl]));
    if (p.paused) { title.append(h("span", "badge paused", "paused")); }
    card.append(title);
    var dl = h("dl");
    var reasons = (p.printer_state_reasons || []).filter(function (r) { return r !== "none"; });
    row(dl, "Health", HEALTH_TEXT[hl] + (p.health_reason ? " (" + p.health_reason + ")" : ""));
    row(dl, "State", p.printer_state || "-");
    row(dl, "Reasons", reasons.length ? reasons.join(", ") : "none");
    if (p.printer_state_message) { row(dl, "Message", p.printer_state_message); }
    row(dl, "Queued in printer", p.queued_job_count === null ? "-" : p.queued_job_count);
    row(dl, "Waiting", p.waiting + (p.waiting ? " (oldest " + age(p.oldest_waiting_s) + ")" : ""));
    row(dl, "Printing", p.printing_job || "-", p.printing_job ? "mono" : null);
    row(dl, "Pool", p.pool || "-");
    row(dl, "Paused", p.paused ? "yes" : "no");
    if (p.last_error) { row(dl, "Last error", p.last_error); }
    card.append(dl);
    return card;
  }

  function poolTable(pools) {
    if (!pools.length) { return h("p", "empty", "No pools configured."); }
    var head = h("tr", null, h("th", null, "Pool"), h("th", null, "Printers"),
                 h("th", "n", "Waiting"), h("th", "n", "Oldest"));
    var body = h("tbody");
    pools.forEach(function (p) {
      body.append(h("tr", null, h("td", null, p.name), h("td", null, p.printers.join(", ")),
                    h("td", "n", p.waiting), h("td", "n", age(p.oldest_waiting_s))));
    });
    return h("table", null, h("thead", null, head), body);
  }

  function deadList(dl) {
    if (!dl.jobs.length) { return h("p", "empty", "Empty: no job is waiting for a technician."); }
    var ul = h("ul", "dead");
    dl.jobs.forEach(function (j) {
      var where = j.printed_on || j.printer || (j.pool ? "pool " + j.pool : "-");
      var info = h("dl");
      row(info, "Reason", j.dead_reason || "-");
      row(info, "Owner", j.owner);
      row(info, "Printer", where);
      row(info, "Attempts", j.attempts);
      row(info, "Dead since", when(j.updated_at));
      if (j.last_error) { row(info, "Last error", j.last_error); }
      var li = h("li", null, h("div", null, h("span", "badge dead", j.state), " ",
                                h("span", "mono", j.id)), info);
      li.setAttribute("data-job", j.id);
      ul.append(li);
    });
    return ul;
  }

  function render(printers, dead) {
    var list = printers.printers || [];
    byId("printers").replaceChildren(list.length
      ? h("div", "grid") : h("p", "empty", "No printers configured."));
    if (list.length) {
      var grid = byId("printers").firstChild;
      list.forEach(function (p) { grid.append(printerCard(p)); });
    }
    byId("pools").replaceChildren(poolTable(printers.pools || []));
    byId("dead-count").textContent = String(dead.count);
    var more = dead.count > dead.jobs.length
      ? h("p", "empty", "Showing the oldest " + dead.jobs.length + " of " + dead.count + ".")
      : null;
    byId("dead").replaceChildren(deadList(dead), more || "");
  }

  function setConn(text, bad) {
    var c = byId("conn");
    c.textContent = text;
    c.className = bad ? "bad" : "";
    document.body.classList.toggle("stale", !!bad);
  }
  function showLogin(message) {
    byId("login").hidden = false;
    byId("forget").hidden = true;
    var alert = byId("auth-error");
    alert.hidden = !message;
    alert.textContent = message || "";
    if (message) { setConn("Not connected", true); }
    byId("token").focus();
  }

  function problemDetail(resp) {
    return resp.json().then(function (p) {
      return (p && p.detail) ? String(p.detail) : resp.statusText;
    }, function () { return resp.statusText; });
  }

  function get(path, token, signal) {
    return fetch(path, { headers: { "Authorization": "Bearer " + token,
                                    "Accept": "application/json" },
                         cache: "no-store", credentials: "omit", signal: signal });
  }

  function authFailure(resp) {
    problemDetail(resp).then(function (detail) {
      forgetToken();
      var what = resp.status === 403
        ? "This token is not a technician's token (403 Forbidden): " + detail +
          ". The status page needs a tech token."
        : "The appliance refused the token (401 Unauthorized): " + detail +
          ". Enter a valid tech token.";
      showLogin(what);
    });
  }

  function schedule() {
    if (timer !== null) { clearTimeout(timer); }
    timer = setTimeout(tick, POLL_MS);
  }

  function tick() {
    timer = null;
    var token = readToken();
    if (!token) { showLogin(null); return; }
    var ctl = new AbortController();
    var cut = setTimeout(function () { ctl.abort(); }, TIMEOUT_MS);
    Promise.all([get("v1/printers", token, ctl.signal),
                 get("v1/dead-letter?limit=" + DEAD_SHOWN, token, ctl.signal)])
      .then(function (rs) {
        var denied = rs.filter(function (r) { return r.status === 401 || r.status === 403; });
        if (denied.length) { authFailure(denied[0]); return; }
        var failed = rs.filter(function (r) { return !r.ok; });
        if (failed.length) {
          return problemDetail(failed[0]).then(function (d) {
            setConn("The appliance answered " + failed[0].status + ": " + d + " (retrying)", true);
            schedule();
          });
        }
        return Promise.all([rs[0].json(), rs[1].json()]).then(function (bodies) {
          render(bodies[0], bodies[1]);
          byId("data").hidden = false;
          byId("login").hidden = true;
          byId("forget").hidden = false;
          setConn("Live, updated " + new Date().toLocaleTimeString(), false);
          document.body.setAttribute("data-loaded", "1");
          schedule();
        });
      })
      .catch(function () {
        setConn("Appliance unreachable (retrying every " + POLL_MS / 1000 + " s)", true);
        schedule();
      })
      .then(function () { clearTimeout(cut); });
  }

  byId("login").addEventListener("submit", function (ev) {
    ev.preventDefault();
    var t = byId("token").value.trim();
    if (!t) { return; }
    byId("token").value = "";
    saveToken(t);
    byId("auth-error").hidden = true;
    setConn("Connecting...", false);
    tick();
  });
  byId("forget").addEventListener("click", function () {
    forgetToken();
    if (timer !== null) { clearTimeout(timer); timer = null; }
    setConn("Not connected", true);
    showLogin(null);
  });

  tick();
})();
"""
_SCRIPT = (
    _SCRIPT.replace("@POLL_MS@", str(POLL_INTERVAL_MS))
    .replace("@TIMEOUT_MS@", str(REQUEST_TIMEOUT_MS))
    .replace("@DEAD_SHOWN@", str(DEAD_LETTER_SHOWN))
)

_BODY = """
<header>
  <h1>edgeprint</h1>
  <span id="conn" role="status" aria-live="polite">Connecting...</span>
  <button id="forget" type="button" hidden>Change token</button>
</header>
<main>
  <form id="login" hidden autocomplete="off">
    <label for="token"><strong>Technician token</strong></label><br>
    <input id="token" name="token" type="password" autocomplete="off" spellcheck="false"
           placeholder="tech bearer token">
    <br><button type="submit">Connect</button>
    <p class="empty">Kept in this browser tab only (sessionStorage) and sent as
    <span class="mono">Authorization: Bearer</span> to this appliance.</p>
  </form>
  <div id="auth-error" class="alert" role="alert" hidden></div>
  <div id="data" hidden>
    <h2>Printers</h2>
    <div id="printers"></div>
    <h2>Pools</h2>
    <div id="pools"></div>
    <h2>Dead-letter queue (<span id="dead-count">?</span>)</h2>
    <div id="dead"></div>
  </div>
</main>
"""


def _sha256_source(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


PAGE = (
    "<!doctype html>\n"
    '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
    '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
    '<meta name="referrer" content="no-referrer">\n'
    '<link rel="icon" href="data:,">\n'
    "<title>edgeprint status</title>\n"
    f"<style>{_STYLE}</style>\n</head>\n<body>{_BODY}<script>{_SCRIPT}</script>\n"
    "</body>\n</html>\n"
)

#: Only this page's own script and style (by hash); requests only to the appliance itself.
CONTENT_SECURITY_POLICY = (
    f"default-src 'none'; script-src {_sha256_source(_SCRIPT)}; "
    f"style-src {_sha256_source(_STYLE)}; connect-src 'self'; img-src data:; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)

_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
}
_BODY_BYTES = PAGE.encode()


async def status_page(request: web.Request) -> web.Response:
    """GET /: the live status page (no data in it, so no token needed)."""
    return web.Response(
        body=_BODY_BYTES, content_type="text/html", charset="utf-8", headers=_HEADERS
    )


def add_routes(app: web.Application) -> None:
    """Register ``GET /`` (and HEAD) on ``app``; call before the app starts."""
    app.router.add_get("/", status_page)
