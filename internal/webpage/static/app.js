// Vigil's dashboard, enhanced: every page works without this script; with
// it, the page's live part (#live) is refetched every few seconds, the
// search box filters as you type, times are shown in your own zone too,
// and copy buttons copy. No framework and no build step: the server
// renders the HTML, this swaps it in.
"use strict";
(function () {
  // Arrived by a link from another site, which does not carry the
  // SameSite=Strict session cookie: open the same page again from here.
  if (document.querySelector("[data-bounce]")) {
    location.replace(location.href);
    return;
  }
  var REFRESH_MS = 5000;
  var live = document.querySelector("[data-live]");
  var lastUpdate = Date.now();
  var inflight = null;

  function localTimes(root) {
    root.querySelectorAll("time[data-local]").forEach(function (el) {
      var d = new Date(el.getAttribute("datetime"));
      if (!isNaN(d)) {
        el.textContent = d.toLocaleString(undefined, { weekday: "short", day: "numeric", month: "short", hour: "2-digit", minute: "2-digit", timeZoneName: "short" });
      }
    });
  }

  function showAge() {
    var el = document.querySelector("[data-updated]");
    if (!el) return;
    var s = Math.round((Date.now() - lastUpdate) / 1000);
    el.textContent = s < 2 ? "Updated just now." : "Updated " + s + "s ago.";
  }

  // announce tells screen readers what changed (the summary or the state
  // line), once per change: not the age, which changes every second.
  var announcer = document.querySelector("[data-announce]");
  var said = null;
  function summaryText() {
    var src = document.querySelector("[data-announce-source]");
    if (!src) return "";
    var copy = src.cloneNode(true);
    copy.querySelectorAll(".updated, .wall-link").forEach(function (el) { el.remove(); });
    return copy.textContent.replace(/\s+/g, " ").trim();
  }
  function announce() {
    var now = summaryText();
    if (announcer && said !== null && now !== said) announcer.textContent = now;
    said = now;
  }

  function refresh() {
    if (!live || document.hidden) return;
    if (inflight) inflight.abort();
    var ctl = new AbortController();
    inflight = ctl;
    fetch(location.pathname + location.search, { headers: { "X-Vigil-Fragment": "1" }, credentials: "same-origin", signal: ctl.signal, cache: "no-store" })
      .then(function (resp) {
        if (resp.status === 401) { location.reload(); return null; }
        if (!resp.ok) throw new Error(resp.status);
        return resp.text();
      })
      .then(function (html) {
        if (html == null) return;
        // Content does not move under someone working in it: while focus
        // is inside the live part, the update waits (the age says so).
        if (live.contains(document.activeElement)) return;
        live.innerHTML = html;
        localTimes(live);
        lastUpdate = Date.now();
        showAge();
        announce();
      })
      .catch(function () { /* offline for a moment: the age keeps growing, which says so */ })
      .finally(function () { if (inflight === ctl) inflight = null; });
  }

  // The search box filters as you type; the URL follows, so it can be shared.
  var form = document.querySelector("form[data-live-search]");
  if (form && live) {
    var timer = null;
    form.querySelector("input[type=search]").addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(function () {
        var params = new URLSearchParams(new FormData(form));
        if (!params.get("q")) params.delete("q");
        var qs = params.toString();
        history.replaceState(null, "", qs ? "/?" + qs : "/");
        refresh();
      }, 200);
    });
  }

  document.addEventListener("click", function (ev) {
    var btn = ev.target.closest("button[data-copy]");
    if (!btn) return;
    var src = document.getElementById(btn.getAttribute("data-copy"));
    if (!src) return;
    var was = btn.innerHTML;
    function flash(msg) {
      btn.textContent = msg;
      setTimeout(function () { btn.innerHTML = was; }, 2000);
    }
    // The clipboard API needs a secure origin (HTTPS or localhost);
    // elsewhere the text is selected, to copy with the keyboard.
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(src.textContent.trim()).then(function () { flash("Copied"); });
      return;
    }
    var range = document.createRange();
    range.selectNodeContents(src);
    var sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
    flash("Selected: press Ctrl+C");
  });

  localTimes(document);
  said = summaryText();
  if (live) {
    setInterval(refresh, REFRESH_MS);
    setInterval(showAge, 1000);
    document.addEventListener("visibilitychange", function () { if (!document.hidden) refresh(); });
  }
})();
