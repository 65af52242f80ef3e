"use strict";
// The technicians' status page (edgeprint/api/status_page.py inlines this file).
// Everything from the API becomes text nodes, never markup. Every action asks for
// confirmation in the page's own dialog and shows the API's answer.
(function () {
  var KEY = "edgeprint.techToken";
  var POLL_MS = 2000, TIMEOUT_MS = 5000, DEAD_SHOWN = 100, JOBS_SHOWN = 20;
  var memoryToken = null;
  var timer = null;
  var pending = null; // the action waiting for confirmation

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
  function clip(text, n) { return text.length > n ? text.slice(0, n - 1) + "…" : text; }
  function age(s) {
    if (s === null || s === undefined) { return "-"; }
    s = Math.max(0, Math.floor(s));
    if (s < 60) { return s + " s"; }
    if (s < 3600) { return Math.floor(s / 60) + " min " + (s % 60) + " s"; }
    return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min";
  }
  // A time beside a printer, as the problems' sentences give it (edgeprint.timefmt.clock_time):
  // "08:02:14" today, else "Dec 6 08:02" — one format in a printer's card.
  var MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
  function two(n) { return (n < 10 ? "0" : "") + n; }
  function clock(iso) {
    var d = new Date(iso), now = new Date();
    if (!iso || isNaN(d.getTime())) { return iso ? String(iso) : "-"; }
    if (d.toDateString() === now.toDateString()) {
      return two(d.getHours()) + ":" + two(d.getMinutes()) + ":" + two(d.getSeconds());
    }
    return MONTHS[d.getMonth()] + " " + d.getDate() + " " + two(d.getHours()) + ":" +
      two(d.getMinutes());
  }
  // every time on the page reads the same way (a job's, a printer's, the last update)
  var when = clock;
  function short(id) { return String(id).slice(0, 8); }

  // <details> whose open state outlives the 2 s re-render (kept by key): a tapped id or a
  // problem's evidence stays open until tapped again.
  var openDetails = {};
  function kept(key, cls, summary, body) {
    var d = h("details", cls, h("summary", null, summary), body);
    d.open = !!openDetails[key];
    d.addEventListener("toggle", function () {
      if (d.open) { openDetails[key] = 1; } else { delete openDetails[key]; }
    });
    return d;
  }
  // A job id as its first 8 characters; a tap (the summary is a button) shows it whole, on
  // one line (ids never wrap mid-string).
  function idChip(id) {
    var chip = kept("id:" + id, "jobid", h("span", "mono short", short(id)),
                    h("span", "mono full", String(id)));
    chip.firstChild.setAttribute("aria-label", "Job " + short(id) + ": show the whole id");
    chip.setAttribute("data-id", id);
    return chip;
  }
  function health(p) {
    if (p.printer_state === null && !p.reachable) { return p.last_error ? "down" : "unknown"; }
    if (!p.reachable) { return "down"; }
    return p.healthy ? "healthy" : "unhealthy";
  }
  // the CLI's words (edgeprint.cli.render.health) and the RUNBOOK's: one word per state
  var HEALTH_TEXT = { healthy: "ok", unhealthy: "UNHEALTHY", down: "DOWN", unknown: "unknown" };
  var REASON_TEXT = {
    outcome_unknown: "Unknown outcome: the printer lost track of this job, so it may or may " +
      "not have printed. Look at the printer's output, then say what you found.",
    poison: "The printer refused the document itself: it cannot be printed as sent.",
    attempts_exhausted: "Printing failed on every attempt.",
    document_missing: "The document of this job could not be read from the appliance's disk."
  };
  var STATES = ["HELD", "RELEASED", "PRINTING", "DONE", "DEAD", "CANCELLED", "EXPIRED"];
  var CANCELLABLE = { HELD: 1, RELEASED: 1, PRINTING: 1, DEAD: 1 };

  function row(dl, label, value, cls) {
    dl.append(h("dt", null, label), h("dd", cls || null, value));
  }

  // --- actions: confirm, call the API, show its answer --------------------------------------

  function button(label, action, target, spec, cls) {
    var b = h("button", cls || null, label);
    b.type = "button";
    b.setAttribute("data-action", action);
    b.setAttribute("data-target", target);
    b.addEventListener("click", function () { ask(spec); });
    return b;
  }

  function ask(spec) {
    if (document.body.classList.contains("viewer")) { return; }  // read-only: no action
    pending = spec;
    byId("confirm-text").textContent = spec.question;
    byId("confirm-more").replaceChildren(spec.more ? spec.more() : "");
    byId("confirm-yes").textContent = spec.yes;
    byId("confirm").hidden = false;
    byId("confirm-yes").focus();
  }

  function closeDialog() {
    pending = null;
    byId("confirm").hidden = true;
  }

  function showAnswer(text, bad) {
    var a = byId("answer");
    a.textContent = text;
    a.className = bad ? "bad" : "ok";
    a.hidden = false;
  }

  function run(spec) {
    var token = readToken();
    if (!token) { showLogin(null); return; }
    var ctl = new AbortController();
    var cut = setTimeout(function () { ctl.abort(); }, TIMEOUT_MS * 4);
    var init = { method: "POST", cache: "no-store", credentials: "omit", signal: ctl.signal,
                 headers: { "Authorization": "Bearer " + token, "Accept": "application/json" } };
    if (spec.body) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(spec.body);
    }
    Object.keys(spec.headers || {}).forEach(function (k) { init.headers[k] = spec.headers[k]; });
    var answered = false;
    document.body.setAttribute("data-busy", "1");
    showAnswer(spec.yes + ": sending...", false);
    fetch(spec.path, init).then(function (resp) {
      return resp.json().then(function (body) { return [resp, body]; },
                              function () { return [resp, null]; });
    }).then(function (pair) {
      var resp = pair[0], body = pair[1];
      answered = true;
      if (resp.ok && body) {
        showAnswer(spec.done(body) + " (" + resp.status + " " + resp.statusText + ")", false);
      } else {
        var detail = body && body.detail ? String(body.detail) : resp.statusText;
        var type = body && body.type ? String(body.type).replace("urn:edgeprint:problem:", "") : "";
        showAnswer("Refused (" + resp.status + " " + resp.statusText +
                   (type ? ", " + type : "") + "): " + detail, true);
      }
    }, function () {
      showAnswer(spec.yes + ": no answer from the appliance; check before trying again.", true);
    }).then(function () {
      clearTimeout(cut);
      document.body.removeAttribute("data-busy");
      if (spec.after) { spec.after(answered); }
      tick();
    });
  }

  function jobDone(body) {
    return "Job " + short(body.id) + " is now " + body.state +
      (body.cancel_requested ? " (the printer is cancelling it)" : "");
  }

  function jobActions(j, inDeadLetter) {
    var box = h("div", "actions");
    if (inDeadLetter && j.dead_reason === "outcome_unknown") {
      box.append(button("It printed", "resolve-printed", j.id, {
        question: "Did job " + short(j.id) + " (" + j.owner + ") come out of the printer? " +
          "It will be marked DONE and not printed again.",
        yes: "It printed", path: "v1/jobs/" + j.id + "/resolve", body: { printed: true },
        done: jobDone }, "primary"));
      box.append(button("Print again", "resolve-not-printed", j.id, {
        question: "Job " + short(j.id) + " (" + j.owner + ") did not come out: print it " +
          "once more?", yes: "Print again", path: "v1/jobs/" + j.id + "/resolve",
        body: { printed: false }, done: jobDone }));
    } else if (inDeadLetter) {
      box.append(button("Retry", "replay", j.id, {
        question: "Send job " + short(j.id) + " (" + j.owner + ") back to its printer to " +
          "try again?", yes: "Retry", path: "v1/jobs/" + j.id + "/replay", done: jobDone }));
    }
    if (j.state === "HELD") { box.append(releaseButton(j)); }
    if (CANCELLABLE[j.state]) {
      box.append(button("Cancel", "cancel", j.id, {
        question: "Cancel job " + short(j.id) + " (" + j.owner + ")? It will not be printed.",
        yes: "Cancel job", path: "v1/jobs/" + j.id + "/cancel", done: jobDone }, "danger"));
    }
    return box;
  }

  // --- release a HELD job to a printer or pool (issue 25) ------------------------------------

  var lastPools = [];

  // The places a job may go: its own pool first, then the pools, then the printers (healthy
  // ones first; one with a current problem marked "(down)"). Values are "pool:NAME" or
  // "printer:NAME"; the job's own target is chosen unless a person picks another.
  function releaseChoices(j) {
    var sel = h("select");
    sel.id = "release-to";
    if (j.pool) { sel.append(option("pool:" + j.pool, "any printer of its pool (" + j.pool + ")")); }
    if (lastPools.length) {
      var pools = h("optgroup");
      pools.label = "Pools";
      lastPools.forEach(function (p) { pools.append(option("pool:" + p.name, "pool " + p.name)); });
      sel.append(pools);
    }
    if (lastPrinters.length) {
      var group = h("optgroup");
      group.label = "Printers";
      // healthy ones first here: they are where a job should go
      var healthy = lastPrinters.filter(function (p) { return !troubled(p); });
      healthy.concat(lastPrinters.filter(troubled)).forEach(function (p) {
        group.append(option("printer:" + p.name, p.name + (troubled(p) ? " (down)" : "")));
      });
      sel.append(group);
    }
    sel.value = j.pool ? "pool:" + j.pool : (j.printer ? "printer:" + j.printer : sel.value);
    var box = h("div", "more", h("label", null, "Print on"), sel);
    box.firstChild.setAttribute("for", "release-to");
    if (j.pin_required) {
      var pin = h("input");
      pin.id = "release-pin";
      pin.type = "password";
      pin.setAttribute("inputmode", "numeric");
      pin.setAttribute("autocomplete", "off");
      var lab = h("label", null, "The job's PIN");
      lab.setAttribute("for", "release-pin");
      box.append(lab, pin);
    }
    return box;
  }
  function option(value, text) {
    var o = h("option", null, text);
    o.value = value;
    return o;
  }
  function releaseBody() {
    var v = byId("release-to").value, cut = v.indexOf(":");
    var body = {};
    body[v.slice(0, cut)] = v.slice(cut + 1);
    var pin = byId("release-pin");
    if (pin && pin.value.trim()) { body.pin = pin.value.trim(); }
    return body;
  }

  function releaseButton(j) {
    return button("Release", "release", j.id, {
      question: "Release job " + short(j.id) + " (" + j.owner + ")? It prints once, on:",
      yes: "Release", path: "v1/jobs/" + j.id + "/release",
      more: function () { return releaseChoices(j); }, body: releaseBody,
      done: function (b) {
        return jobDone(b) + (b.printer ? ", to " + b.printer : (b.pool ? ", to pool " + b.pool : ""));
      },
      // a story open on this job is read again: it shows the release (or why not)
      after: function () { if (openStory === j.id) { showStory(j.id); } } }, "primary");
  }

  function printerDone(body) {
    var p = body.printer && body.printer.name ? body.printer : body;
    var text = p.name + " is " + (p.paused ? "paused" : "taking work");
    if (body.moved) { text += "; " + body.moved.length + " waiting job(s) moved to its pool"; }
    return text;
  }
  function identified(body) {
    return body.action === "identify-printer"
      ? body.printer + ": Identify-Printer sent (it shows, flashes or sounds)"
      : body.printer + ": test page sent (printer job " + body.printer_job_id + ")";
  }

  // --- supplies and label runway (issue 23) ---------------------------------------------------

  var LOW_TEXT = { "media-low": "Paper or labels low", "marker-supply-low": "Supply low",
                   "toner-low": "Toner low", "ink-low": "Ink low" };
  var RUNWAY_WARN_MIN = 10;
  function keyword(r) { return r.replace(/-(report|warning|error)$/, ""); }
  function pct(v) { return v === null || v === undefined ? "?" : v + " %"; }
  function minutes(m) {
    if (m === null || m === undefined) { return "no labels printed lately"; }
    return m < 1 ? "under a minute" : "about " + Math.round(m) + " min";
  }
  // What should make a technician look: low reasons the printer reports, a short runway.
  function supplyWarnings(p) {
    var out = [];
    (p.printer_state_reasons || []).forEach(function (r) {
      var text = LOW_TEXT[keyword(r)];
      if (text) { out.push(text + " (" + r + ")"); }
    });
    var w = p.runway;
    if (w && w.labels_left === 0) {
      out.push("Label roll counted empty: load a new roll");
    } else if (w && w.minutes_left !== null && w.minutes_left < RUNWAY_WARN_MIN) {
      out.push("Labels run out in " + minutes(w.minutes_left) + " (" + w.labels_left + " left)");
    }
    return out;
  }
  function supplyRows(dl, p) {
    var sup = (p.supplies || []).map(function (x) { return x.name + " " + pct(x.level_percent); });
    if (sup.length) { row(dl, "Supplies", sup.join(", ")); }
    var trays = (p.media_levels || []).filter(function (t) { return t.level_percent !== null; })
      .map(function (t) { return t.tray + " " + pct(t.level_percent) + (t.media ? " (" + t.media + ")" : ""); });
    if (trays.length) { row(dl, "Trays", trays.join(", ")); }
    var w = p.runway;
    if (w) {
      row(dl, "Labels", w.labels_left + " of " + w.labels_per_roll + " left; " +
        w.per_minute + " a minute; " +
        (w.labels_left === 0 ? "counted empty" : "runs out in " + minutes(w.minutes_left)));
    }
  }
  function rollLoaded(body) {
    return body.printer + ": new roll, " + (body.runway ? body.runway.labels_left +
      " labels left" : "no labels_per_roll counted");
  }

  function printerActions(p) {
    var box = h("div", "actions");
    var base = "v1/printers/" + encodeURIComponent(p.name);
    if (p.paused) {
      box.append(button("Resume", "resume", p.name, {
        question: "Resume " + p.name + "? It takes new work again.", yes: "Resume",
        path: base + "/resume", done: printerDone }, "primary"));
    } else {
      var cleared = personClears(p);
      if (cleared) {  // the problem's sentence says "resume it": the button that does
        box.append(button("Resume", "resume", p.name, {
          question: "Resume " + p.name + "? Only once you have checked what it printed: " +
            "\u201c" + cleared + "\u201d is cleared and it takes new work again.",
          yes: "Resume", path: base + "/resume", done: printerDone }, "primary"));
      }
      box.append(button("Pause", "pause", p.name, {
        question: "Pause " + p.name + "? It gets no new work; the job in hand finishes.",
        yes: "Pause", path: base + "/pause", done: printerDone }));
    }
    box.append(button("Drain", "drain", p.name, {
      question: "Drain " + p.name + "? It is paused and the jobs waiting for it move to " +
        (p.pool ? "the other printers of pool " + p.pool : "its pool") + ".",
      yes: "Drain", path: base + "/drain", done: printerDone }));
    if (p.runway) {
      box.append(button("Roll loaded", "media-loaded", p.name, {
        question: "A new roll of " + p.runway.labels_per_roll + " labels is in " + p.name +
          "? Its count starts again from a full roll.", yes: "Roll loaded",
        path: base + "/media-loaded", done: rollLoaded }));
    }
    box.append(button("Identify", "identify", p.name, {
      question: "Make " + p.name + " show itself? (IPP Identify-Printer when it supports it, " +
        "else a one-page test print.)", yes: "Identify", path: base + "/identify",
      body: { how: "auto" }, done: identified }));
    box.append(button("Test page", "test-page", p.name, {
      question: "Print a one-page test page on " + p.name + "?", yes: "Print test page",
      path: base + "/identify", body: { how: "test-page" }, done: identified }));
    box.append(stickerButton(p));
    return box;
  }

  // A printer's sticker (issue 24): the PDF is fetched with the token (a plain link could not
  // send it) and handed to the browser as a download. Its QR code points at this page's
  // address unless the appliance has [release] public_url.
  function stickerButton(p) {
    var b = h("button", null, "Sticker");
    b.type = "button";
    b.setAttribute("data-action", "sticker");
    b.setAttribute("data-target", p.name);
    b.addEventListener("click", function () {
      var token = readToken();
      if (!token) { showLogin(null); return; }
      var file = "sticker-" + p.name + ".pdf";
      showAnswer("Sticker for " + p.name + ": making it...", false);
      fetch("v1/printers/" + encodeURIComponent(p.name) + "/sticker.pdf", {
        cache: "no-store", credentials: "omit",
        headers: { "Authorization": "Bearer " + token, "Accept": "application/pdf" }
      }).then(function (resp) {
        if (!resp.ok) {
          return resp.json().then(function (body) { return body && body.detail; },
                                  function () { return null; }).then(function (detail) {
            showAnswer("Sticker refused (" + resp.status + " " + resp.statusText + "): " +
                       (detail ? String(detail) : resp.statusText), true);
          });
        }
        return resp.blob().then(function (blob) {
          var url = URL.createObjectURL(blob);
          var a = h("a", null);
          a.setAttribute("href", url); // a blob: of this page, not an external asset
          a.download = file;
          a.hidden = true;
          document.body.append(a);
          a.click();
          a.remove();
          setTimeout(function () { URL.revokeObjectURL(url); }, 60000);
          showAnswer("Sticker for " + p.name + " downloaded: " + file +
                     " (print it and put it on the printer)", false);
        });
      }, function () {
        showAnswer("Sticker for " + p.name + ": no answer from the appliance.", true);
      });
    });
    return b;
  }

  // --- the event: rehearsal, go-live (issue 23) ----------------------------------------------

  function waitingTests(ev) {
    var c = ev.rehearsal_jobs_by_state || {};
    return (c.HELD || 0) + (c.RELEASED || 0) + (c.DEAD || 0);
  }

  function eventBox(ev) {
    var box = h("div", "event " + ev.mode);
    box.setAttribute("data-mode", ev.mode);
    var since = ev.since ? " since " + when(ev.since) : "";
    var made = 0;
    var counts = ev.rehearsal_jobs_by_state || {};
    Object.keys(counts).forEach(function (s) { made += counts[s]; });
    if (ev.mode === "rehearsal") {
      box.append(h("p", null, h("strong", null, "Rehearsal"), since +
        ": every new job is a test, counted apart from the live figures (" + made +
        " test job(s) so far)."));
      var waiting = waitingTests(ev);
      box.append(h("div", "actions", button("Go live", "go-live", "event", {
        question: "Go live? The rehearsal ends; its " + waiting + " test job(s) still " +
          "waiting (held, released or dead) are cancelled, and the live figures start now.",
        yes: "Go live", path: "v1/event/live",
        done: function (b) {
          return "Live: the rehearsal is over; " + (b.cancelled || []).length +
            " rehearsal job(s) cancelled";
        } }, "primary")));
    } else {
      box.append(h("p", null, h("strong", null, "Live"), since + "."));
      box.append(h("div", "actions", button("Start rehearsal", "rehearsal", "event", {
        question: "Start a rehearsal? Every new job is a test until you go live; go-live " +
          "cancels the tests still waiting.",
        yes: "Start rehearsal", path: "v1/event/rehearsal",
        done: function () { return "Rehearsal started: new jobs are tests until go-live"; }
      })));
    }
    if (ev.badge_media) { box.append(h("p", "empty", "Badge stock: " + ev.badge_media)); }
    return box;
  }

  function severity(reason) {
    var m = /-(error|warning|report)$/.exec(reason);
    return m ? m[1] : "error";
  }

  // One printer's check in words: [verdict, text]; "fail" when it would fail the morning.
  function checkVerdict(p, c) {
    var fail = [], warn = [], facts = [];
    if (p.paused) { fail.push("paused: it takes no work"); }
    if (!c.reachable) {
      fail.push("does not answer: " + (c.error || "no answer"));
    } else {
      if (c.error) { fail.push("answers, but not usably: " + c.error); }
      var reasons = (c.printer_state_reasons || []).filter(function (r) { return r !== "none"; });
      var bad = reasons.filter(function (r) { return severity(r) === "error"; });
      var watch = reasons.filter(function (r) { return severity(r) === "warning"; });
      if (c.printer_state === "stopped") {
        fail.push("stopped: " + (reasons.join(", ") || "no reason given"));
      } else if (bad.length) { fail.push("reports " + bad.join(", ")); }
      if (watch.length) { warn.push("reports " + watch.join(", ")); }
      if (c.accepting_jobs === false) { fail.push("not accepting jobs"); }
      if (c.stock_fit === "none") {
        fail.push("wrong stock: " + c.media_ready.join(", ") + " ready, not " + c.badge_media);
      } else if (c.stock_fit === "sheet") {
        warn.push("no " + c.badge_media + " ready: the badge comes out on larger sheets");
      } else if (c.badge_media && !c.media_ready.length) {
        warn.push("reports no ready media: look at the printer");
      }
      if (c.tls && c.tls.mode === "pin") {
        if (c.tls.error) { fail.push("no TLS session: " + c.tls.error); }
        else if (c.tls.matches === false) {
          fail.push("presents another certificate than the pinned one");
        }
      }
      if (c.round_trip_s !== null) {
        facts.push("answers in " + Math.round(c.round_trip_s * 1000) + " ms");
      }
      if (c.printer_state) { facts.push(c.printer_state); }
      if (c.media_ready.length) { facts.push("stock ready: " + c.media_ready.join(", ")); }
    }
    if (!c.badge_media) { warn.push("stock not checked: [event] badge_media is not set"); }
    var verdict = fail.length ? "fail" : (warn.length ? "warn" : "ok");
    var words = fail.concat(warn).concat(facts);
    return [verdict, (fail.length ? "would fail the morning: " : "ready: ") + words.join("; ")];
  }

  var lastPrinters = [];

  function runPreflight() {
    var token = readToken();
    if (!token) { showLogin(null); return; }
    var list = byId("preflight");
    list.replaceChildren(h("li", null, "Asking " + lastPrinters.length + " printer(s)..."));
    document.body.setAttribute("data-preflight", "running");
    var init = { method: "POST", cache: "no-store", credentials: "omit",
                 headers: { "Authorization": "Bearer " + token, "Accept": "application/json" } };
    Promise.all(lastPrinters.map(function (p) {
      return fetch("v1/printers/" + encodeURIComponent(p.name) + "/check", init)
        .then(function (r) {
          return r.json().then(function (b) { return [p, r, b]; },
                               function () { return [p, r, null]; });
        }, function () { return [p, null, null]; });
    })).then(function (answers) {
      var failed = 0;
      list.replaceChildren();
      answers.forEach(function (a) {
        var p = a[0], r = a[1], b = a[2], v;
        if (r && r.ok && b) { v = checkVerdict(p, b); }
        else {
          v = ["fail", "would fail the morning: could not be checked (" +
               (r ? r.status + " " + (b && b.detail ? b.detail : r.statusText)
                  : "no answer from the appliance") + ")"];
        }
        if (v[0] === "fail") { failed += 1; }
        var li = h("li", v[0], h("strong", null, p.name), ": " + v[1]);
        li.setAttribute("data-printer", p.name);
        li.setAttribute("data-verdict", v[0]);
        list.append(li);
      });
      showAnswer("Preflight: " + (answers.length - failed) + " of " + answers.length +
                 " printer(s) ready" + (failed ? "; " + failed + " would fail the morning" : ""),
                 failed > 0);
      document.body.setAttribute("data-preflight", "done");
    });
  }

  // --- many jobs at once: checkboxes, "all by reason", "all matching" (issue 24) ---------
  // Kept apart from the rest: the lists only call selectBox(j); render() calls bulkRender().

  var selected = {};  // job id -> {id, owner, state}: kept across the 2 s re-renders
  var BULK_MAX = 500; // the API's largest limit

  function selectBox(j) {
    var box = h("input", "pick");
    box.type = "checkbox";
    box.checked = !!selected[j.id];
    box.setAttribute("data-select", j.id);
    box.setAttribute("aria-label", "Select job " + short(j.id) + " (" + j.owner + ")");
    box.addEventListener("change", function () {
      if (box.checked) { selected[j.id] = { id: j.id, owner: j.owner, state: j.state }; }
      else { delete selected[j.id]; }
      syncSelection();
      bulkBar();
    });
    return box;
  }

  // Every box of one job (a job may be in both lists) shows the same choice.
  function syncSelection() {
    document.querySelectorAll("input[data-select]").forEach(function (b) {
      b.checked = !!selected[b.getAttribute("data-select")];
    });
  }

  function plural(n, word, many) { return n + " " + (n === 1 ? word : (many || word + "s")); }

  // "14 replayed, 0 conflicts": the API's per-job outcomes counted; the jobs acted on are
  // no longer selected.
  function bulkSummary(word) {
    return function (body) {
      var n = {};
      (body.results || []).forEach(function (r) {
        n[r.outcome] = (n[r.outcome] || 0) + 1;
        if (r.outcome !== "conflict") { delete selected[r.id]; }
      });
      var parts = [(n[word] || 0) + " " + word, plural(n.conflict || 0, "conflict")];
      Object.keys(n).forEach(function (o) {
        if (o !== word && o !== "conflict") { parts.push(n[o] + " " + o); }
      });
      bulkBar();
      return parts.join(", ") + (body.more ? "; more match: do it again for the rest" : "");
    };
  }

  function bulkBar() {
    var bar = byId("bulk-bar");
    var ids = Object.keys(selected);
    if (!ids.length) { bar.hidden = true; bar.replaceChildren(); return; }
    var jobs = ids.map(function (id) { return selected[id]; });
    var owners = jobs.map(function (j) { return j.owner; }).filter(function (o, i, a) {
      return a.indexOf(o) === i; }).slice(0, 3).join(", ");
    var box = h("div", "actions");
    box.append(button("Cancel " + plural(ids.length, "job"), "bulk-cancel", "selected", {
      question: "Cancel " + plural(ids.length, "selected job") + " (" + owners +
        (jobs.length > 3 ? ", ..." : "") + ")? They will not be printed.",
      yes: "Cancel " + plural(ids.length, "job"), path: "v1/jobs/cancel",
      body: { ids: ids, limit: ids.length }, done: bulkSummary("cancelled") }, "danger"));
    if (jobs.every(function (j) { return j.state === "DEAD"; })) {
      box.append(button("Retry " + plural(ids.length, "job"), "bulk-replay", "selected", {
        question: "Send " + plural(ids.length, "selected dead letter") + " back to their " +
          "printers to try again? Each is printed once more.",
        yes: "Retry " + plural(ids.length, "job"), path: "v1/jobs/replay",
        body: { ids: ids, limit: ids.length }, done: bulkSummary("replayed") }));
    }
    var clear = h("button", null, "Clear selection");
    clear.type = "button";
    clear.setAttribute("data-action", "bulk-clear");
    clear.setAttribute("data-target", "selected");
    clear.addEventListener("click", function () { selected = {}; syncSelection(); bulkBar(); });
    box.append(clear);
    bar.replaceChildren(h("p", null, h("strong", null, plural(ids.length, "job")),
                          " selected"), box);
    bar.hidden = false;
  }

  // One button per dead reason that a retry can settle (never outcome_unknown: those may
  // have printed, and each needs a person to look).
  function reasonActions(stats) {
    var box = h("div", "actions");
    var reasons = stats.dead_letters_by_reason || {};
    Object.keys(reasons).forEach(function (r) {
      var n = reasons[r];
      if (!n || r === "outcome_unknown") { return; }
      var all = n === 1 ? "the 1 dead letter" : "all " + n + " dead letters";
      box.append(button("Retry " + all + " with reason " + r, "replay-reason", r, {
        question: "Send " + all + " with reason " + r + " back to their printers to try " +
          "again? Each is printed once more.",
        yes: "Retry " + plural(n, "job"), path: "v1/jobs/replay",
        body: { filter: { dead_reason: r }, limit: Math.min(n, BULK_MAX) },
        done: bulkSummary("replayed") }));
    });
    return box;
  }

  function postJson(path, body) {
    var token = readToken();
    return fetch(path, { method: "POST", cache: "no-store", credentials: "omit",
      headers: { "Authorization": "Bearer " + token, "Accept": "application/json",
                 "Content-Type": "application/json" },
      body: JSON.stringify(body) }).then(function (resp) {
      return resp.json().then(function (b) { return [resp, b]; },
                              function () { return [resp, null]; });
    });
  }

  // "Cancel all matching": the jobs list's own filter, counted by a dry run first so the
  // question names how many; the call takes at most that many (the oldest).
  function cancelMatching() {
    var filter = {}, said = [];
    var state = byId("job-state").value, owner = byId("job-owner").value.trim();
    if (state) { filter.state = state; said.push("state " + state); }
    if (owner) { filter.owner = owner; said.push("owner " + owner); }
    postJson("v1/jobs/cancel", { filter: filter, limit: BULK_MAX, dry_run: true })
      .then(function (pair) {
        var resp = pair[0], body = pair[1];
        if (!resp.ok || !body) {
          showAnswer("Refused (" + resp.status + "): " + (body && body.detail ? body.detail
                     : resp.statusText), true);
          return;
        }
        var n = (body.results || []).filter(function (r) {
          return r.outcome === "selected"; }).length;
        if (!n) { showAnswer("No job matching " + said.join(", ") + " can be cancelled.", false); return; }
        ask({ question: "Cancel " + (body.more ? "the oldest " : "all ") + plural(n, "job") +
                " matching " + said.join(", ") + "? They will not be printed.",
              yes: "Cancel " + plural(n, "job"), path: "v1/jobs/cancel",
              body: { filter: filter, limit: n }, done: bulkSummary("cancelled") });
      }, function () { showAnswer("Cancel all matching: no answer from the appliance.", true); });
  }

  function bulkRender(stats) {
    byId("dead-bulk").replaceChildren(reasonActions(stats));
    var state = byId("job-state").value, owner = byId("job-owner").value.trim();
    byId("filter-cancel").hidden = !(owner || (state && CANCELLABLE[state]));
    bulkBar();
  }

  // --- rendering ---------------------------------------------------------------------------------

  // Each printer-state-reasons value: its severity in words, what it means, since when.
  var SEVERITY_TEXT = { error: "Error", warning: "Warning", report: "Note" };
  // On a printer that takes no work, the blocking reasons first; a warning or a note does not
  // block by itself, and is labelled as the printer's own word (beside the problem above,
  // "Note: out of paper" would read as a contradiction).
  var SEVERITY_BLOCKED = { error: "Blocking", warning: "Printer's warning", report: "Printer's note" };
  var SEVERITY_ORDER = { error: 0, warning: 1, report: 2 };
  function reasonList(p) {
    var list = p.reasons;
    if (!list) {  // an appliance without the reasons field: the bare values
      var bare = (p.printer_state_reasons || []).filter(function (r) { return r !== "none"; });
      return bare.length ? bare.join(", ") : "none";
    }
    if (!list.length) { return "none"; }
    var ul = h("ul", "reasons");
    var blocked = !p.healthy;
    var labels = blocked ? SEVERITY_BLOCKED : SEVERITY_TEXT;
    if (blocked) {  // a stable sort: the printer's order within a severity
      list = list.map(function (r, i) { return [r, i]; }).sort(function (a, b) {
        var d = (SEVERITY_ORDER[a[0].severity] || 0) - (SEVERITY_ORDER[b[0].severity] || 0);
        return d || a[1] - b[1];
      }).map(function (x) { return x[0]; });
    }
    list.forEach(function (r) {
      var li = h("li", null, h("span", "sev " + r.severity, labels[r.severity] || r.severity),
                 " " + r.words + " ", h("span", "mono", "(" + r.value + ")"),
                 r.since ? ", since " + clock(r.since) : null);
      li.setAttribute("data-reason", r.value);
      li.setAttribute("data-severity", r.severity);
      ul.append(li);
    });
    return ul;
  }

  // --- problems in plain words (issue 25) -------------------------------------------------------
  // GET /v1/printers gives each printer its `problems` (current ones first, then those that
  // ended lately) and `problem` (the first current one's sentence, its time in it). An
  // appliance without the field: the health and last error as before.

  function hasProblems(p) { return Array.isArray(p.problems); }
  // Problems a technician's resume clears (edgeprint.printers.health.Health.clear): the
  // sentence of the first current one, or null.
  var PERSON_CLEARS = { "cannot-report-job-state": 1, quarantined: 1 };
  function personClears(p) {
    var x = currentProblems(p).filter(function (x) { return PERSON_CLEARS[x.kind]; })[0];
    return x ? x.text : null;
  }
  function currentProblems(p) {
    return hasProblems(p) ? p.problems.filter(function (x) { return x.until === null; }) : [];
  }
  // A printer a technician should look at first.
  function troubled(p) {
    if (hasProblems(p)) { return p.problem !== null || currentProblems(p).length > 0; }
    var hl = health(p);
    return hl === "down" || hl === "unhealthy";
  }
  function sortPrinters(list) {
    return list.slice().sort(function (a, b) {
      var ta = troubled(a) ? 0 : 1, tb = troubled(b) ? 0 : 1;
      if (ta !== tb) { return ta - tb; }
      return a.name < b.name ? -1 : (a.name > b.name ? 1 : 0);
    });
  }
  function evidence(p, x) {
    if (!x.evidence) { return null; }
    return kept("ev:" + p.name + ":" + x.kind + ":" + x.since, "evidence", "Evidence",
                h("p", "mono", x.evidence));
  }
  function problemLines(p) {
    return p.problems.map(function (x) {
      var now = x.until === null;
      var text = String(x.text);
      if (!now && !/^was\b/i.test(text)) { text = "was: " + text; }
      var box = h("div", now ? "problem" : "problem was", h("p", null, text), evidence(p, x));
      box.setAttribute("data-problem", x.kind);
      box.setAttribute("data-current", now ? "1" : "0");
      return box;
    });
  }

  function printerCard(p) {
    var hl = health(p);
    var words = hasProblems(p);
    var card = h("article", "card " + (p.paused ? "paused" : hl));
    card.setAttribute("data-printer", p.name);
    var title = h("h3", null, h("span", null, p.name),
                  h("span", "badge " + hl, HEALTH_TEXT[hl]));
    if (p.paused) { title.append(h("span", "badge paused", "paused")); }
    var warnings = supplyWarnings(p);
    if (warnings.length) { title.append(h("span", "badge low", "supplies low")); }
    card.append(title);
    if (words) { card.append.apply(card, problemLines(p)); }
    warnings.forEach(function (w) {
      var el = h("p", "warn", w);
      el.setAttribute("data-warning", p.name);
      card.append(el);
    });
    var dl = h("dl");
    // the raw reason only when the appliance gives no problems in words
    row(dl, "Health", HEALTH_TEXT[hl] + (!words && p.health_reason ? " (" + p.health_reason + ")" : ""));
    row(dl, "State", p.printer_state || "-");
    row(dl, "Reasons", reasonList(p));
    if (p.printer_state_message) { row(dl, "Printer says", "\u201c" + p.printer_state_message + "\u201d"); }
    row(dl, "Queued in printer", p.queued_job_count === null ? "-" : p.queued_job_count);
    supplyRows(dl, p);
    row(dl, "Waiting", p.waiting + (p.waiting ? " (oldest " + age(p.oldest_waiting_s) + ")" : ""));
    row(dl, "Pool", p.pool || "-");
    row(dl, "Paused", p.paused ? "yes" : "no");
    if (p.last_error && !words) { row(dl, "Last error", p.last_error); }
    var stock = (p.media_ready || []).map(function (m) {
      return m.size + (m.label ? " labels" : "") + (m.tray ? " (" + m.tray + ")" : "");
    });
    row(dl, "Stock", stock.length ? stock.join(", ") : "not reported");
    // the job in hand on a line of its own: its whole id, when tapped, has the card's width
    var printing = h("p", "printing", "Printing: ", p.printing_job ? idChip(p.printing_job) : "-");
    card.append(dl, printing, printerActions(p));
    return card;
  }

  function poolTable(pools) {
    if (!pools.length) { return h("p", "empty", "No pools configured."); }
    var head = h("tr", null, h("th", null, "Pool"), h("th", null, "Printers"),
                 h("th", "n", "Waiting"), h("th", "n", "Oldest"));
    var body = h("tbody");
    pools.forEach(function (p) {
      // on a phone each row is a card, as the jobs' (labels from data-label): no word breaks
      var tr = h("tr", null, h("td", "name", p.name),
                 labelled("Printers", h("td", null, p.printers.join(", "))),
                 labelled("Waiting", h("td", "n", p.waiting)),
                 labelled("Oldest", h("td", "n", age(p.oldest_waiting_s))));
      tr.setAttribute("data-pool", p.name);
      body.append(tr);
    });
    return h("table", "pools", h("thead", null, head), body);
  }

  function deadList(dl) {
    if (!dl.jobs.length) { return h("p", "empty", "Empty: no job is waiting for a technician."); }
    var ul = h("ul", "dead");
    dl.jobs.forEach(function (j) {
      var where = j.printed_on || j.printer || (j.pool ? "pool " + j.pool : "-");
      var info = h("dl");
      row(info, "Reason", j.dead_reason || "-");
      row(info, "Owner", j.owner);
      if (j.title) { row(info, "Title", j.title); }
      row(info, "Printer", where);
      row(info, "Attempts", j.attempts);
      row(info, "Dead since", when(j.updated_at));
      if (j.last_error) { row(info, "Last error", j.last_error); }
      var why = REASON_TEXT[j.dead_reason] || "Parked for a technician (" +
        (j.dead_reason || "no reason given") + ").";
      var li = h("li", null, h("div", "head", selectBox(j), h("span", "badge dead", j.state),
                                idChip(j.id)),
                 h("p", "why", why), info, jobActions(j, true));
      li.setAttribute("data-job", j.id);
      li.setAttribute("data-reason", j.dead_reason || "");
      ul.append(li);
    });
    return ul;
  }

  function counts(stats) {
    var ul = byId("counts");
    ul.replaceChildren();
    STATES.forEach(function (s) {
      var li = h("li", null, s, h("b", null, (stats.jobs_by_state || {})[s] || 0));
      li.setAttribute("data-state", s);
      ul.append(li);
    });
    var reasons = stats.dead_letters_by_reason || {};
    Object.keys(reasons).forEach(function (r) {
      var li = h("li", null, "DEAD " + r, h("b", null, reasons[r]));
      li.setAttribute("data-reason", r);
      ul.append(li);
    });
  }

  function labelled(label, td) {
    td.setAttribute("data-label", label);
    return td;
  }

  function jobTable(list) {
    var jobs = list.jobs || [];
    if (!jobs.length) { return h("p", "empty", "No job matches."); }
    var head = h("tr", null, h("th", null, h("span", "sr-only", "Select")),
                 h("th", null, "Job"), h("th", null, "State"),
                 h("th", null, "Owner"), h("th", null, "Title"), h("th", null, "Where"),
                 h("th", null, "Changed"),
                 h("th", null, h("span", "sr-only", "Actions")));
    var body = h("tbody");
    jobs.forEach(function (j) {
      var where = j.printed_on || j.printer || (j.pool ? "pool " + j.pool : "-");
      var acts = jobActions(j, false);
      acts.prepend(storyButton(j, "Story"));
      // on a phone each row is a card: the cells' labels come from data-label (CSS)
      var tr = h("tr", null, h("td", "pick", selectBox(j)), h("td", "id", idChip(j.id)),
                 labelled("State", h("td", "state", j.state)),
                 labelled("Owner", h("td", "free", j.owner)),
                 labelled("Title", h("td", "free", clip(j.title || "-", 40))),
                 labelled("Where", h("td", null, where)),
                 labelled("Changed", h("td", null, when(j.updated_at))),
                 h("td", "acts", acts));
      tr.setAttribute("data-job", j.id);
      tr.setAttribute("data-state", j.state);
      body.append(tr);
    });
    return h("table", "jobs", h("thead", null, head), body);
  }

  function render(stats, printers, dead, jobs, ev) {
    counts(stats);
    byId("event").replaceChildren(eventBox(ev));
    var list = sortPrinters(printers.printers || []);
    lastPrinters = list;
    lastPools = printers.pools || [];
    byId("printers").replaceChildren(list.length
      ? h("div", "grid") : h("p", "empty", "No printers configured."));
    if (list.length) {
      var grid = byId("printers").firstChild;
      list.forEach(function (p) { grid.append(printerCard(p)); });
    }
    byId("pools").replaceChildren(poolTable(printers.pools || []));
    var waits = printers.waiting_for_stock || [];
    byId("stock-waits").hidden = !waits.length;
    byId("stock-waits").replaceChildren.apply(byId("stock-waits"), waits.map(function (w) {
      return h("p", null, w.jobs + " job(s) waiting for stock: " + w.reason);
    }));
    byId("dead-count").textContent = String(dead.count);
    var more = dead.count > dead.jobs.length
      ? h("p", "empty", "Showing the oldest " + dead.jobs.length + " of " + dead.count + ".")
      : null;
    byId("dead").replaceChildren(deadList(dead), more || "");
    byId("jobs").replaceChildren(jobTable(jobs));
    bulkRender(stats);
  }

  // --- a job's story, reprint with a reason, search (issue 24) ------------------------------

  var openStory = null;     // the job whose story is shown
  var reprintFor = null;    // the DONE job the reprint dialog is about
  var reprintKeys = {};     // job id -> the Idempotency-Key of a reprint that got no answer

  function storyButton(j, label) {
    var b = h("button", label ? "link" : "link mono", label || short(j.id));
    b.type = "button";
    b.setAttribute("data-action", "open-story");
    b.setAttribute("data-target", j.id);
    b.setAttribute("aria-label", "Job " + short(j.id) + ": open its story");
    b.addEventListener("click", function () { showStory(j.id); });
    return b;
  }

  function showStory(id) {
    var token = readToken();
    if (!token) { showLogin(null); return; }
    openStory = id;
    document.body.setAttribute("data-story", "loading");
    get("v1/jobs/" + encodeURIComponent(id) + "/events", token).then(function (r) {
      return r.json().then(function (b) { return [r, b]; }, function () { return [r, null]; });
    }).then(function (pair) {
      if (openStory !== id) { return; }
      var r = pair[0], b = pair[1];
      if (r.ok && b) { renderStory(b); return; }
      storyText("Job " + short(id), "The story could not be read (" + r.status + " " +
        (b && b.detail ? b.detail : r.statusText) + ").");
    }, function () {
      storyText("Job " + short(id), "No answer from the appliance: the story could not be read.");
    });
  }

  function storyText(title, text) {
    byId("story-title").textContent = title;
    byId("story-body").replaceChildren(h("p", "empty", text));
    byId("story").hidden = false;
    document.body.setAttribute("data-story", "failed");
  }

  function jobLinks(ids) {
    var span = h("span");
    ids.forEach(function (id, i) {
      if (i) { span.append(", "); }
      span.append(storyButton({ id: id }));
    });
    return span;
  }

  function renderStory(s) {
    var j = s.job;
    var where = j.printed_on || j.printer || (j.pool ? "pool " + j.pool : "-");
    byId("story-title").textContent = "Job " + short(j.id) + " (" + j.owner + "): " + j.state;
    var body = [h("p", "mono whole-id", j.id),
                h("p", null, j.copies + " copy(ies), " + where + "; document " +
                  (j.document.pages === null ? "?" : j.document.pages) + " page(s)")];
    if (j.title) { body.splice(1, 0, h("p", "story-job-title", "Title: " + j.title)); }
    if (j.reprint_of) { body.push(h("p", null, "A reprint of job ", jobLinks([j.reprint_of]))); }
    if (j.reprints.length) {
      body.push(h("p", null, "Reprinted " + j.reprints.length + " time(s): ", jobLinks(j.reprints)));
    }
    if (j.document.format !== "application/vnd.zebra-zpl") { body.push(storyPreview(j)); }
    var ol = h("ol", "story");
    s.entries.forEach(function (e) {
      var t = h("time", null, when(e.at));
      t.setAttribute("datetime", e.at);
      var li = h("li", null, t, e.words);
      li.setAttribute("data-kind", e.kind);
      ol.append(li);
    });
    if (!s.entries.length) { ol.append(h("li", "empty", "Nothing recorded yet.")); }
    body.push(ol);
    var actions = h("div", "actions");
    if (j.state === "HELD") { actions.append(releaseButton(j)); }
    if (j.state === "DONE") {
      var b = h("button", "primary", "Reprint\u2026");
      b.type = "button";
      b.setAttribute("data-action", "reprint");
      b.setAttribute("data-target", j.id);
      b.addEventListener("click", function () { askReprint(j); });
      actions.append(b);
    }
    var close = h("button", null, "Close");
    close.type = "button";
    close.setAttribute("data-action", "close-story");
    close.addEventListener("click", function () {
      openStory = null;
      byId("story").hidden = true;
      document.body.removeAttribute("data-story");
    });
    actions.append(close);
    body.push(actions);
    byId("story-body").replaceChildren.apply(byId("story-body"), body);
    byId("story").hidden = false;
    document.body.setAttribute("data-story", j.id);
  }

  // the first page, drawn by the appliance's render workers (GET /v1/jobs/{id}/preview.png)
  var previewUrl = null;    // the object URL shown now (revoked when another replaces it)

  function storyPreview(j) {
    var box = h("p", "preview");
    var token = readToken();
    if (!token) { return box; }
    get("v1/jobs/" + encodeURIComponent(j.id) + "/preview.png?page=1&width=300", token)
      .then(function (r) {
        if (r.status === 410) { box.append("The document was deleted: no preview."); return; }
        if (!r.ok) { box.append("No preview (" + r.status + ")."); return; }
        return r.blob().then(function (blob) {
          if (openStory !== j.id) { return; }
          if (previewUrl) { URL.revokeObjectURL(previewUrl); }
          previewUrl = URL.createObjectURL(blob);
          var img = h("img");
          img.alt = "First page of job " + short(j.id);
          img.width = 150;
          img.setAttribute("src", previewUrl);  // a blob: of the appliance's own answer
          box.append(img);
        });
      }, function () { box.append("No preview: no answer from the appliance."); });
    return box;
  }

  function randomKey() {
    var bytes = new Uint8Array(16);
    window.crypto.getRandomValues(bytes);
    return "status-page-" + Array.from(bytes).map(function (x) {
      return (x + 256).toString(16).slice(1);
    }).join("");
  }

  function askReprint(j) {
    reprintFor = j;
    var where = j.printer || (j.pool ? "pool " + j.pool : "its printer");
    byId("reprint-text").textContent = "Print job " + short(j.id) + " (" + j.owner +
      ") again? A new job goes to " + where + " at once (" + j.copies + " copy(ies)); " +
      "both jobs record who asked and why.";
    byId("reprint-reason").value = "";
    byId("reprint-error").hidden = true;
    byId("reprint").hidden = false;
    byId("reprint-reason").focus();
  }

  function closeReprint() {
    reprintFor = null;
    byId("reprint").hidden = true;
  }

  function sendReprint() {
    var j = reprintFor;
    if (!j) { return; }
    var reason = byId("reprint-reason").value.trim();
    if (!reason) {
      byId("reprint-error").textContent = "Say why it is printed again (1 to 200 characters).";
      byId("reprint-error").hidden = false;
      byId("reprint-reason").focus();
      return;
    }
    // a reprint that got no answer keeps its key: trying again cannot print it twice
    var key = reprintKeys[j.id] || randomKey();
    reprintKeys[j.id] = key;
    closeReprint();
    run({ yes: "Reprint", path: "v1/jobs/" + j.id + "/reprint", body: { reason: reason },
          headers: { "Idempotency-Key": key },
          done: function (b) {
            return "Reprint of job " + short(b.reprint_of) + " made: job " + short(b.id) +
              " is " + b.state;
          },
          after: function (answered) {
            if (answered) { delete reprintKeys[j.id]; }
            showStory(j.id);
          } });
  }

  var SEARCH_RULES = {
    id_prefix: [/^[0-9a-f]{4,32}$/, "A job id prefix is 4 to 32 characters from 0-9 and a-f."],
    idempotency_key: [/^[\x21-\x7e]{8,80}$/,
                      "An Idempotency-Key is 8 to 80 printable characters, no spaces."],
    owner_contains: [/^[^\x00-\x1f\x7f-\x9f]{1,255}$/, "Type part of an owner's name."]
  };

  function searchQuery() {
    var by = byId("job-search-by").value;
    var text = byId("job-search").value.trim();
    if (by === "id_prefix") { text = text.toLowerCase(); }
    var hint = byId("search-hint");
    if (!text) { hint.hidden = true; return ""; }
    var rule = SEARCH_RULES[by];
    if (!rule || !rule[0].test(text)) {
      hint.textContent = (rule ? rule[1] : "Unknown search.") + " Not searched.";
      hint.hidden = false;
      return "";
    }
    hint.hidden = true;
    return "&" + by + "=" + encodeURIComponent(text);
  }

  byId("reprint-form").addEventListener("submit", function (ev) {
    ev.preventDefault();
    sendReprint();
  });
  byId("reprint-no").addEventListener("click", function () {
    var j = reprintFor;
    closeReprint();
    if (j) { showAnswer("Reprint: not done (you cancelled).", false); }
  });
  document.addEventListener("keydown", function (ev) {
    if (ev.key === "Escape" && !byId("reprint").hidden) { byId("reprint-no").click(); }
  });

  // --- polling -----------------------------------------------------------------------------------

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

  // A viewer token (issue 26) reads everything and acts on nothing: the page hides every
  // action (body.viewer in the style) and says why; the API refuses them anyway (403).
  function showRole(token) {
    var viewer = !!token && token.role === "viewer";
    document.body.classList.toggle("viewer", viewer);
    document.body.setAttribute("data-role", token && token.role ? String(token.role) : "");
    var note = byId("read-only");
    note.hidden = !viewer;
    note.textContent = viewer ? "Read-only: this is a viewer token (" + token.name +
      "), so the page shows no actions. A technician's token acts." : "";
  }

  function authFailure(resp) {
    problemDetail(resp).then(function (detail) {
      forgetToken();
      var what = resp.status === 403
        ? "This token is not a technician's token (403 Forbidden): " + detail +
          ". The status page needs a tech token (or a viewer's, to read only)."
        : "The appliance refused the token (401 Unauthorized): " + detail +
          ". Enter a valid tech token.";
      showLogin(what);
    });
  }

  function schedule() {
    if (timer !== null) { clearTimeout(timer); }
    timer = setTimeout(tick, POLL_MS);
  }

  function jobsQuery() {
    var q = "v1/jobs?limit=" + JOBS_SHOWN;
    var state = byId("job-state").value;
    var owner = byId("job-owner").value.trim();
    if (state) { q += "&state=" + encodeURIComponent(state); }
    if (owner) { q += "&owner=" + encodeURIComponent(owner); }
    return q + searchQuery();
  }

  function tick() {
    if (timer !== null) { clearTimeout(timer); }
    timer = null;
    var token = readToken();
    if (!token) { showLogin(null); return; }
    var ctl = new AbortController();
    var cut = setTimeout(function () { ctl.abort(); }, TIMEOUT_MS);
    var query = jobsQuery();
    Promise.all([get("v1/stats", token, ctl.signal), get("v1/printers", token, ctl.signal),
                 get("v1/dead-letter?limit=" + DEAD_SHOWN, token, ctl.signal),
                 get(query, token, ctl.signal), get("v1/event", token, ctl.signal),
                 get("v1/token", token, ctl.signal)])
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
        return Promise.all(rs.map(function (r) { return r.json(); })).then(function (b) {
          showRole(b[5]);
          render(b[0], b[1], b[2], b[3], b[4]);
          byId("data").hidden = false;
          byId("login").hidden = true;
          byId("forget").hidden = false;
          setConn("Live, updated " + clock(new Date().toISOString()), false);
          document.body.setAttribute("data-loaded", "1");
          document.body.setAttribute("data-jobs-query", query);
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
  byId("filters").addEventListener("submit", function (ev) {
    ev.preventDefault();
    tick();
  });
  byId("job-state").addEventListener("change", function () { tick(); });
  byId("preflight-run").addEventListener("click", runPreflight);
  byId("filter-cancel").addEventListener("click", cancelMatching);
  byId("confirm-no").addEventListener("click", function () {
    var spec = pending;
    closeDialog();
    if (spec) { showAnswer(spec.yes + ": not done (you said no).", false); }
  });
  byId("confirm-yes").addEventListener("click", function () {
    var spec = pending;
    // what the dialog asked (a release's printer or pool) is read before it closes
    if (spec && typeof spec.body === "function") {
      spec = Object.assign({}, spec, { body: spec.body() });
    }
    closeDialog();
    if (spec) { run(spec); }
  });
  document.addEventListener("keydown", function (ev) {
    if (ev.key === "Escape" && !byId("confirm").hidden) { byId("confirm-no").click(); }
  });

  tick();
})();
