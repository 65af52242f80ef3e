"use strict";
// The release page (issue 24). Everything from the API is shown as text nodes.
(function () {
  var CLEAR_AFTER_MS = 6000;   // a shared station forgets the person after a release
  var WEDGE_GAP_MS = 30;       // a card reader types faster than this between keys, on average
  var WEDGE_MIN = 4;
  var name = decodeURIComponent(location.pathname.split("/")[2] || "");
  var base = "/release/" + encodeURIComponent(name);
  var token = null;
  var m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (m) {
    try { sessionStorage.setItem("edgeprint-station", decodeURIComponent(m[1])); } catch (e) {}
  }
  // the upload page's link names the job (never its PIN): the PIN fields open with it
  var linked = /(?:^#|&)job=([0-9a-fA-F]{6,32})(?:&|$)/.exec(location.hash);
  if (m || linked) { history.replaceState(null, "", location.pathname); }
  try { token = sessionStorage.getItem("edgeprint-station"); } catch (e) {}
  var $ = function (id) { return document.getElementById(id); };
  var code = $("code"), pin = $("pin"), job = $("job"), answer = $("answer");
  var credential = null, place = null, clearTimer = null, previews = [];
  var keys = [];  // times of the keys typed into the code field since it was empty

  $("title").textContent = "Print here: " + name;
  document.title = "Print here: " + name;

  function say(text, kind) {
    answer.textContent = text;
    answer.className = kind || "";
  }

  function busy(on) {
    if (on) { document.body.setAttribute("data-busy", "1"); }
    else { document.body.removeAttribute("data-busy"); }
  }

  function focusCode() {
    if (!$("pin-fields").hidden) { return; }
    code.focus();
  }

  function forget() {
    credential = null;
    code.value = ""; pin.value = ""; job.value = "";
    keys = [];
    $("mine").hidden = true;
    clearList();
    document.body.setAttribute("data-state", "ready");
    focusCode();
  }

  function clearList() {
    var list = $("jobs");
    while (list.firstChild) { list.removeChild(list.firstChild); }
    previews.forEach(function (u) { URL.revokeObjectURL(u); });
    previews = [];
    document.body.removeAttribute("data-previews");
  }

  function call(path, body) {
    var headers = { "Content-Type": "application/json" };
    if (token) { headers.Authorization = "Bearer " + token; }
    return fetch(base + path, {
      method: "POST", headers: headers, body: JSON.stringify(body), cache: "no-store",
    }).then(function (r) {
      var type = r.headers.get("Content-Type") || "";
      if (type.indexOf("image/") === 0) { return r.blob().then(function (b) { return [r, b]; }); }
      return r.json().then(function (j) { return [r, j]; }, function () { return [r, {}]; });
    });
  }

  function problemText(r, p) {
    var type = (p && p.type) || "";
    var wait = r.headers.get("Retry-After");
    if (type.endsWith(":credential-invalid")) {
      return "That code, card or PIN opens nothing here. Check it and try again.";
    }
    if (type.endsWith(":release-locked")) {
      return "Too many wrong tries. Try again in " + (wait || "a few") + " seconds.";
    }
    if (type.endsWith(":rate-limited")) {
      return "Too many tries at once. Try again in " + (wait || "a few") + " seconds.";
    }
    if (type.endsWith(":forbidden")) { return "This station may not print here."; }
    if (type.endsWith(":printer-not-found")) { return "There is no printer of this name here."; }
    if (r.status === 422) { return "Type your release code or card number, then Enter."; }
    return "Something went wrong (" + r.status + "). Try again, or ask at the desk.";
  }

  function when(iso) {
    var d = new Date(iso);
    if (isNaN(d.getTime())) { return ""; }
    return "sent " + d.toLocaleString([], { hour: "2-digit", minute: "2-digit",
      day: "numeric", month: "short" });
  }

  function plural(n, word) { return n + " " + word + (n === 1 ? "" : "s"); }

  function showPlace(p) {
    place = p;
    var where = $("where"), select = $("printer");
    if (p.kind !== "pool") { where.hidden = true; return; }
    while (select.firstChild) { select.removeChild(select.firstChild); }
    var any = document.createElement("option");
    any.value = ""; any.textContent = "Any printer in " + p.place;
    select.appendChild(any);
    p.printers.forEach(function (pr) {
      var o = document.createElement("option");
      o.value = pr.name;
      o.textContent = pr.name + (pr.name === p.suggested ? " (least busy)" : "") +
        (pr.ready ? "" : " (not ready)") + ", " + plural(pr.waiting, "job") + " waiting";
      select.appendChild(o);
    });
    select.value = p.suggested || "";
    where.hidden = false;
  }

  function showJobs(found) {
    clearList();
    showPlace(found);
    var list = $("jobs"), wanted = [];
    found.jobs.forEach(function (j) {
      var li = document.createElement("li");
      li.setAttribute("data-job", j.id);
      var text = document.createElement("div");
      text.className = "job-text";
      var t = document.createElement("div");
      t.className = "job-title"; t.textContent = j.title;
      var f = document.createElement("div");
      f.className = "job-facts";
      f.textContent = [j.pages === null ? "" : plural(j.pages, "page"), plural(j.copies, "copy")
        .replace("copys", "copies"), when(j.created_at)].filter(Boolean).join(" · ");
      text.append(t, f);
      li.appendChild(text);
      if (j.has_preview) { wanted.push([j, li]); }
      var b = document.createElement("button");
      b.type = "button"; b.textContent = "Print";
      b.setAttribute("aria-label", "Print " + j.title);
      b.addEventListener("click", function () { print({ jobs: [j.id] }); });
      li.appendChild(b);
      list.appendChild(li);
    });
    // one at a time: each look is a try counted for this address until it is checked
    wanted.reduce(function (prev, w) {
      return prev.then(function () { return preview(w[0], w[1]); });
    }, Promise.resolve());
    $("mine").hidden = found.jobs.length === 0;
    say(found.message, found.jobs.length ? "" : "ok");
    document.body.setAttribute("data-state", found.jobs.length ? "listed" : "empty");
    if (!found.jobs.length) { scheduleForget(); }
  }

  function preview(j, li) {
    if (!credential) { return Promise.resolve(); }
    return call("/preview", Object.assign({ job_id: j.id }, credential)).then(function (res) {
      if (!res[0].ok || !(res[1] instanceof Blob) || !li.isConnected) { return; }
      var url = URL.createObjectURL(res[1]);
      previews.push(url);
      var img = document.createElement("img");
      img.className = "preview"; img.src = url;
      img.alt = "First page of " + j.title;
      li.insertBefore(img, li.firstChild);
      document.body.setAttribute("data-previews", String(previews.length));
    }, function () {});
  }

  function scheduleForget() {
    if (clearTimer) { clearTimeout(clearTimer); }
    clearTimer = setTimeout(function () { clearTimer = null; forget(); say(""); },
      CLEAR_AFTER_MS);
  }

  function lookup() {
    busy(true);
    say("Looking…");
    return call("/lookup", credential).then(function (res) {
      busy(false);
      if (!res[0].ok) {
        say(problemText(res[0], res[1]), "bad");
        credential = null;
        document.body.setAttribute("data-state", "refused");
        return;
      }
      showJobs(res[1]);
    }, function () { busy(false); say("The printer's box does not answer. Try again.", "bad"); });
  }

  function print(which) {
    if (!credential) { return; }
    var body = Object.assign({}, credential, which);
    var chosen = place && place.kind === "pool" ? $("printer").value : "";
    if (chosen) { body.printer = chosen; }
    busy(true);
    say("Sending…");
    return call("/print", body).then(function (res) {
      busy(false);
      if (!res[0].ok) {
        say(problemText(res[0], res[1]), "bad");
        document.body.setAttribute("data-state", "refused");
        return;
      }
      var out = res[1];
      say(out.message, out.released ? "ok" : "");
      (out.outcomes || []).forEach(function (o) {
        if (o.outcome === "released" || o.outcome === "conflict" || o.outcome === "not-found") {
          var li = document.querySelector('li[data-job="' + o.job + '"]');
          if (li) { li.parentNode.removeChild(li); }
        }
      });
      if (!$("jobs").firstChild) { $("mine").hidden = true; }
      document.body.setAttribute("data-state", "printed");
      scheduleForget();
    }, function () { busy(false); say("The printer's box does not answer. Try again.", "bad"); });
  }

  function readCredential() {
    if (!$("pin-fields").hidden) {
      var p = pin.value.trim(), j = job.value.trim();
      return p && j ? { pin: p, job: j } : null;
    }
    var v = code.value.trim();
    return v ? { code: v } : null;
  }

  function fromWedge() {
    var v = code.value.trim();
    if (!$("pin-fields").hidden || v.length < WEDGE_MIN || keys.length < v.length) {
      return false;
    }
    // a person types a key every 100 ms or more; a reader its whole number in a burst
    return (keys[keys.length - 1] - keys[0]) / (keys.length - 1) <= WEDGE_GAP_MS;
  }

  code.addEventListener("keydown", function (e) {
    if (e.key === "Enter") { return; }
    if (e.key && e.key.length === 1) {
      if (!code.value) { keys = []; }
      keys.push(performance.now());
    }
  });
  code.addEventListener("input", function () { if (!code.value) { keys = []; } });

  $("ask").addEventListener("submit", function (e) {
    e.preventDefault();
    if (document.body.hasAttribute("data-busy")) { return; }
    if (clearTimer) { clearTimeout(clearTimer); clearTimer = null; }
    var wedge = fromWedge();
    credential = readCredential();
    if (!credential) { say("Type your release code or card number, then Enter.", "bad"); return; }
    keys = [];
    if (wedge) {
      code.value = "";
      print({ all: true });
    } else {
      lookup();
    }
  });

  $("pin-toggle").addEventListener("click", function () {
    var fields = $("pin-fields"), showing = fields.hidden;
    fields.hidden = !showing;
    code.disabled = showing;
    $("pin-toggle").textContent = showing ? "I have a release code or card" : "I have a job PIN";
    (showing ? job : code).focus();
  });

  $("print-all").addEventListener("click", function () { print({ all: true }); });

  if (token) {
    // a station: the card reader types into the code field, so keep it focused
    document.body.setAttribute("data-station", "1");
    document.addEventListener("click", function (e) {
      var tag = e.target && e.target.tagName;
      if (tag !== "SELECT" && tag !== "INPUT" && tag !== "OPTION") { setTimeout(focusCode, 0); }
    });
    document.addEventListener("focusout", function () {
      setTimeout(function () {
        if (!document.activeElement || document.activeElement === document.body) { focusCode(); }
      }, 0);
    });
  }
  if (linked) {
    $("pin-toggle").click();
    job.value = linked[1].toLowerCase();
    pin.focus();
  }
  document.body.setAttribute("data-state", "ready");
  focusCode();
})();
