// The console's shell on every page: the header's live counts (requests waiting, sessions working) from
// /console/pulse, browser notifications (with the person's permission, asked by "Notify me"), and the
// keyboard: "?" opens the list of shortcuts, "g" then a letter goes to a page. A page's own keys (the
// inbox's j/k/a/d) are its script's; none fires while the person types into a field.
"use strict";

(function () {
  const M = window.Mainsail;
  const PULSE_MS = 5000;
  const GO = { s: "/", a: "/approvals", c: "/costs", o: "/overview" };

  function setCount(id, n) {
    const badge = document.getElementById(id);
    if (!badge) return;
    badge.textContent = String(n);
    badge.dataset.count = String(n);
    badge.hidden = false;
  }

  function canNotify() {
    return "Notification" in window && Notification.permission === "granted";
  }

  function notify(title, body, tag, href) {
    if (!canNotify()) return;
    const note = new Notification(title, { body: M.visible(body).slice(0, 200), tag: tag });
    note.onclick = () => { window.focus(); window.location.assign(href); };
  }

  // What changed since the last pulse: requests it had not seen; a session seen busy now idle (finished or failed).
  function tell(before, now) {
    const seen = new Set(before.requests.map((r) => r.id));
    const fresh = now.requests.filter((r) => !seen.has(r.id));
    if (fresh.length) {
      const r = fresh[fresh.length - 1];
      notify("Mainsail: " + now.waiting + " request(s) waiting for approval",
             (r.title ? r.title + " · " : "") + r.tool + ": " + r.summary, "mainsail-approvals", "/approvals");
    }
    const busy = new Set(before.sessions.filter((s) => s.state !== "idle").map((s) => s.id));
    for (const s of now.sessions) {
      if (!busy.has(s.id) || s.state !== "idle") continue;
      const name = s.title || s.id.slice(0, 8);
      notify("Mainsail: session " + (s.failed ? "failed" : "finished"), name, "mainsail-" + s.id,
             "/sessions/" + encodeURIComponent(s.id));
    }
  }

  function watch() {
    if (!document.getElementById("approvals-count")) return;  // signed out: no header to keep
    let before = null;
    async function tick() {
      let now;
      try { now = await M.api("GET", "/console/pulse"); } catch (e) { return; }  // the page's own calls say why
      setCount("approvals-count", now.waiting);
      setCount("running-count", now.running);
      document.dispatchEvent(new CustomEvent("mainsail:pulse", { detail: now }));
      if (before !== null) tell(before, now);
      before = now;
    }
    tick();
    window.setInterval(tick, PULSE_MS);
  }

  function offerNotifications() {
    const button = document.getElementById("notify-me");
    if (!button || !("Notification" in window) || Notification.permission !== "default") return;
    button.hidden = false;
    button.addEventListener("click", async () => {
      await Notification.requestPermission();
      button.hidden = Notification.permission !== "default";
    });
  }

  const help = () => document.getElementById("help");

  function openHelp() {
    const box = help();
    if (!box) return;
    box.hidden = false;
    document.getElementById("help-close").focus();
  }

  function closeHelp() {
    const box = help();
    if (box && !box.hidden) box.hidden = true;
  }

  function typing(target) {
    return target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
  }

  let goPending = false;

  function keys(ev) {
    if (ev.key === "Escape") { closeHelp(); return; }
    if (ev.ctrlKey || ev.metaKey || ev.altKey || typing(ev.target)) return;
    if (goPending) {
      goPending = false;
      if (GO[ev.key]) { ev.preventDefault(); window.location.assign(GO[ev.key]); }
      return;
    }
    if (ev.key === "?") { ev.preventDefault(); if (help() && help().hidden) openHelp(); else closeHelp(); }
    else if (ev.key === "g" && help()) goPending = true;
  }

  document.addEventListener("DOMContentLoaded", () => {
    watch();
    offerNotifications();
    for (const b of document.querySelectorAll("#help-open, [data-help]")) b.addEventListener("click", openHelp);
    const close = document.getElementById("help-close");
    if (close) close.addEventListener("click", closeHelp);
    const box = help();
    if (box) box.addEventListener("click", (ev) => { if (ev.target === box) closeHelp(); });
    document.addEventListener("keydown", keys);
  });

  // For pages' scripts: whether their keys must wait (the help list is open, or "g" began a go-to).
  M.keysBusy = () => goPending || Boolean(help() && !help().hidden);
})();
