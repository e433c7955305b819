// What every console page shares: building elements from data (always as text, never as markup),
// calling the API with the console's cookie, formatting money and times, the status line.
"use strict";

window.Mainsail = (function () {
  // Control characters and bidirectional overrides shown as escapes: a command must read as it runs.
  const HIDDEN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/g;

  function visible(text) {
    return String(text).replace(HIDDEN, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
  }

  // <tag class=cls>text</tag>; text goes in with textContent, so model output stays text.
  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  // A unified diff (lines starting "+", "-", "@@", "---"/"+++", " ") as a <pre class="diff">, each line
  // coloured by its mark, then its note (cut, or why no diff is shown). The server makes the diffs
  // (workflows/edits/preview.py); this only shows them.
  function diff(text, note) {
    const pre = el("pre", "diff");
    const lines = text ? String(text).split("\n") : [];
    const headed = lines.length > 1 && lines[0].startsWith("--- ") && lines[1].startsWith("+++ ");
    lines.forEach((line, i) => {
      const cls = headed && i < 2 ? "file" : line[0] === "+" ? "add" : line[0] === "-" ? "del"
        : line.startsWith("@@") ? "hunk" : "ctx";
      pre.append(el("span", cls, visible(line) + "\n"));
    });
    if (note) pre.append(el("span", "note", "(" + note + ")\n"));
    return pre;
  }

  function money(usd) {
    return usd === null || usd === undefined ? "?" : "$" + Number(usd).toFixed(4);
  }

  function ago(ts) {
    let secs = Math.max(0, Math.floor(Date.now() / 1000 - ts));
    for (const [unit, size] of [["d", 86400], ["h", 3600], ["m", 60]]) {
      if (secs >= size) return Math.floor(secs / size) + unit + " ago";
    }
    return secs + "s ago";
  }

  function status(text, isError) {
    const line = document.getElementById("status");
    if (!line) return;
    line.textContent = text || "";
    line.classList.toggle("error", Boolean(isError));
  }

  function signIn() {
    window.location.assign("/signin?next=" + encodeURIComponent(window.location.pathname));
  }

  // Call the API with the cookie; a change carries X-Mainsail-Console (the API refuses it without).
  async function api(method, path, body) {
    const init = { method: method, credentials: "same-origin", headers: { Accept: "application/json" } };
    if (method !== "GET") {
      init.headers["X-Mainsail-Console"] = "1";
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body || {});
    }
    const response = await fetch(path, init);
    if (response.status === 401) {
      signIn();
      throw new Error("Signed out: the token is no longer valid.");
    }
    let data = null;
    try { data = await response.json(); } catch (e) { data = null; }
    if (!response.ok) {
      const detail = data && typeof data.detail === "string" ? data.detail : response.status + " " + response.statusText;
      throw new Error(detail);
    }
    return data;
  }

  // Run fn now and then every `ms`, never two at once; failures go to the status line.
  function every(ms, fn) {
    let busy = false;
    async function tick() {
      if (busy) return;
      busy = true;
      try { await fn(); } catch (e) { status(e.message, true); } finally { busy = false; }
    }
    window.setInterval(tick, ms);
    return tick;
  }

  // The Approvals link's count, kept live; with the browser's permission (asked by "Notify me", a click),
  // a notification when more requests wait than before, while the page is open (the Notification API).
  function watchApprovals() {
    const badge = document.getElementById("approvals-count");
    if (!badge) return;
    const button = document.getElementById("notify-me");
    const canNotify = "Notification" in window;
    if (button && canNotify && Notification.permission === "default") {
      button.hidden = false;
      button.addEventListener("click", async () => {
        await Notification.requestPermission();
        button.hidden = Notification.permission !== "default";
      });
    }
    let seen = null;
    async function tick() {
      let waiting;
      try { waiting = await api("GET", "/api/approvals"); } catch (e) { return; }
      badge.textContent = String(waiting.length);
      badge.hidden = waiting.length === 0;
      if (seen !== null && waiting.length > seen && canNotify && Notification.permission === "granted") {
        const first = waiting[waiting.length - 1].request || {};
        const note = new Notification("Mainsail: " + waiting.length + " request(s) waiting for approval",
          { body: visible((first.tool || "") + ": " + (first.summary || "")).slice(0, 200), tag: "mainsail-approvals" });
        note.onclick = () => { window.focus(); window.location.assign("/approvals"); };
      }
      seen = waiting.length;
    }
    tick();
    window.setInterval(tick, 5000);
  }

  document.addEventListener("DOMContentLoaded", watchApprovals);

  return { visible, el, diff, money, ago, status, api, every, signIn };
})();
