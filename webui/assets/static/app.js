// boincd dashboard: tabs, confirmations, posting actions, and the live
// stream that replaces a section when the server says it changed. The
// page works without this file, only without live updates.
"use strict";
(function () {
  var root = document.documentElement;
  root.classList.add("js");
  var status = document.getElementById("status");
  var dialog = document.getElementById("confirm");

  function say(text, bad) {
    status.textContent = text;
    status.className = bad ? "error" : "";
  }

  // Tabs: the hash names the view; Tasks by default.
  function showTab() {
    var want = (location.hash || "#tasks").slice(1);
    var tabs = document.querySelectorAll("section.tab");
    var found = false;
    tabs.forEach(function (t) { if (t.id === want) found = true; });
    if (!found) want = "tasks";
    tabs.forEach(function (t) { t.hidden = t.id !== want; });
    document.querySelectorAll("nav a[data-tab]").forEach(function (a) {
      if (a.dataset.tab === want) a.setAttribute("aria-current", "page");
      else a.removeAttribute("aria-current");
    });
  }
  window.addEventListener("hashchange", function () { showTab(); stream(); });
  showTab();

  function confirmFirst(text) {
    return new Promise(function (resolve) {
      if (!dialog || !dialog.showModal) { resolve(window.confirm(text)); return; }
      document.getElementById("confirm-text").textContent = text;
      dialog.returnValue = "";
      dialog.addEventListener("close", function done() {
        dialog.removeEventListener("close", done);
        resolve(dialog.returnValue === "ok");
      });
      dialog.showModal();
      document.getElementById("confirm-cancel").focus();
    });
  }

  function post(form, submitter) {
    var body = new URLSearchParams(new FormData(form, submitter));
    var csrf = body.get("csrf");
    return fetch(form.action, {
      method: "POST", body: body, credentials: "same-origin",
      headers: { "X-Requested-With": "fetch", "X-CSRF-Token": csrf || "" }
    }).then(function (r) {
      if (r.status === 401) { location.href = "/login"; return; }
      if (!r.ok) return r.text().then(function (t) { throw new Error(t.trim() || r.statusText); });
      if (form.classList.contains("account")) {
        say("Asking the project…");
        form.querySelector("[name=password]").value = "";
        return;
      }
      say("Done.");
      if (form.classList.contains("attach") || form.hasAttribute("data-reset")) form.reset();
    }).catch(function (e) { say("Failed: " + e.message, true); });
  }

  // The preferences form: the server answers with the view again, saved
  // or with the faulty field marked; focus goes to that field.
  function postPrefs(form, submitter) {
    var body = new URLSearchParams(new FormData(form, submitter));
    return fetch(form.action, {
      method: "POST", body: body, credentials: "same-origin",
      headers: { "X-Requested-With": "fetch", "X-CSRF-Token": body.get("csrf") || "" }
    }).then(function (r) {
      if (r.status === 401) { location.href = "/login"; return; }
      return r.text().then(function (html) {
        if (r.status !== 200 && r.status !== 422 && r.status !== 409) throw new Error(html.trim() || r.statusText);
        swap("prefs", html);
        var err = document.getElementById("prefs-error");
        if (err) {
          say("Not saved: " + err.textContent, true);
          var bad = document.getElementById("p-" + err.dataset.field);
          if (bad) bad.focus();
        } else {
          var ok = document.getElementById("prefs-saved");
          say(ok ? ok.textContent : "Saved.");
        }
      });
    }).catch(function (e) { say("Failed: " + e.message, true); });
  }

  document.addEventListener("submit", function (ev) {
    var form = ev.target;
    if (!form.classList) return;
    var prefs = form.classList.contains("prefs");
    if (!prefs && !form.classList.contains("act") && !form.classList.contains("account")) return;
    ev.preventDefault();
    var submitter = ev.submitter || null;
    var text = (submitter && submitter.dataset.confirm) || form.dataset.confirm;
    (text ? confirmFirst(text) : Promise.resolve(true)).then(function (ok) {
      if (ok) (prefs ? postPrefs : post)(form, submitter);
    });
  });
  document.addEventListener("change", function (ev) {
    var el = ev.target;
    if (el.hasAttribute && el.hasAttribute("data-autosubmit") && el.form) post(el.form);
  });

  // The stream: each event names a section; its data is the section's
  // new HTML, rendered and escaped by the server. Focus is kept on the
  // same control (by data-k) across the swap, so keyboard users stay put.
  function swap(name, html) {
    var box = document.querySelector('[data-sec="' + name + '"]');
    if (!box) return;
    var active = document.activeElement;
    var key = active && box.contains(active) ? active.getAttribute("data-k") : null;
    if (key && active.tagName === "SELECT") return; // never yank an open menu
    box.innerHTML = html;
    if (key) {
      var again = box.querySelector('[data-k="' + CSS.escape(key) + '"]');
      if (again) again.focus();
    }
  }
  // A task list in the same frame changes card by card: "progress" sets
  // the running tasks' progress and times (as text), "cards" replaces the
  // cards that changed otherwise, keeping the focus as swap does.
  function taskCard(key) {
    return document.querySelector('[data-sec="tasks"] [data-key="' + CSS.escape(key) + '"]');
  }
  function progress(data) {
    JSON.parse(data).forEach(function (p) {
      var card = taskCard(p[0]);
      if (!card) return;
      var bar = card.querySelector("progress");
      if (bar) { bar.value = p[1]; bar.textContent = p[2]; }
      [[".pct", p[2]], [".elapsed", p[3]], [".remaining", p[4]]].forEach(function (f) {
        var el = card.querySelector(f[0]);
        if (el) el.textContent = f[1];
      });
    });
  }
  function cards(html) {
    var t = document.createElement("template");
    t.innerHTML = html;
    var active = document.activeElement;
    var key = active ? active.getAttribute("data-k") : null;
    Array.prototype.slice.call(t.content.children).forEach(function (li) {
      var old = taskCard(li.getAttribute("data-key") || "");
      if (!old) return;
      var had = key && old.contains(active);
      old.replaceWith(li);
      if (had) {
        var again = li.querySelector('[data-k="' + CSS.escape(key) + '"]');
        if (again) again.focus();
      }
    });
  }
  // One stream for the view shown: it keeps the run modes and that view
  // current, and starts again for another view when the tab changes.
  var es = null, shown = null;
  var view = document.body.dataset.view || "";
  var names = ["modes", "tasks", "projects", "account", "transfers", "notices", "log", "host", "stats", "fleet"];
  function stream() {
    if (!window.EventSource) return;
    var tab = (location.hash || "#tasks").slice(1);
    if (!document.getElementById(tab) || !document.getElementById(tab).classList.contains("tab")) tab = "tasks";
    if (es && shown === tab) return;
    if (es) es.close();
    shown = tab;
    var q = "?tab=" + encodeURIComponent(tab) + "&view=" + encodeURIComponent(view) + "&page=" + encodeURIComponent(document.body.dataset.page || "0");
    es = new EventSource("/events" + q);
    names.forEach(function (name) {
      es.addEventListener(name, function (e) { swap(name, e.data); });
    });
    es.addEventListener("progress", function (e) { progress(e.data); });
    es.addEventListener("cards", function (e) { cards(e.data); });
    es.addEventListener("logout", function () { es.close(); location.href = "/login"; });
    es.addEventListener("open", function () { root.dataset.live = "1"; });
    es.addEventListener("error", function () { root.dataset.live = "0"; });
  }
  // A tab in the background costs the daemon nothing: its stream closes
  // and starts again (sending only what changed) when it is shown.
  document.addEventListener("visibilitychange", function () {
    if (document.hidden) {
      if (es) { es.close(); es = null; }
    } else {
      stream();
    }
  });
  stream();
})();
